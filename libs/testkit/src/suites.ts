import { describe, it } from '@jest/globals';

/**
 * `describe` for a suite that needs something this run may lack: runs when
 * `missing` (why it is lacking) is undefined; else, when `fails` (a lack
 * REQUIRE_INFRA=1 does not forgive), one failing test naming it; else the
 * suite is skipped, loudly.
 */
export function describeUnlessMissing(name: string, missing: string | undefined, fn: () => void, fails = false): void {
  if (missing === undefined) {
    describe(name, fn);
  } else if (fails) {
    describe(name, () => {
      it('has what it needs', () => {
        throw new Error(`REQUIRE_INFRA=1 and ${missing}`);
      });
    });
  } else {
    console.warn(`\n\n*** ${name} is SKIPPED: ${missing}\n`);
    describe.skip(`${name} [skipped: ${missing}]`, fn);
  }
}
