import { accessSync, constants, readdirSync } from 'node:fs';
import path from 'node:path';
import { infraRequired, missingReason } from './infra-state';
import { OTELCOL_INSTALL, otelCollectorBinary } from './otel-collector';
import { describeUnlessMissing } from './suites';

/** Whether `file` exists and may be run. */
export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Debian's PostgreSQL server binaries (`apt-get install postgresql`), the newest version there; what infra/local/postgres*.sh run. */
function debianPostgres(): boolean {
  const root = '/usr/lib/postgresql';
  try {
    return readdirSync(root).some((version) => isExecutable(path.join(root, version, 'bin/postgres')));
  } catch {
    return false;
  }
}

/** The programs of `programs` this machine lacks: each on PATH, or `postgresql` for Debian's server binaries. */
export function missingPrograms(programs: readonly string[]): string[] {
  const onPath = (p: string) => (process.env.PATH ?? '').split(':').some((dir) => isExecutable(path.join(dir, p)));
  return programs.filter((p) => (p === 'postgresql' ? !debianPostgres() : !onPath(p)));
}

/**
 * `describe` for a suite that needs the run's Kafka, registry and PostgreSQL
 * and also `programs` (Debian packages that .ci/run installs): runs when all
 * are there, else skips loudly, or fails under REQUIRE_INFRA=1.
 */
export function describeWithKafkaAnd(name: string, programs: readonly string[], fn: () => void): void {
  const lacking = missingPrograms(programs);
  // Missing infrastructure already failed the run's global setup under REQUIRE_INFRA=1; missing programs fail here.
  const infra = missingReason('kafka') ?? missingReason('registry') ?? missingReason('postgres');
  const reason = infra ?? (lacking.length ? `missing ${lacking.join(', ')} (apt-get install ${lacking.join(' ')}; .ci/run does)` : undefined);
  describeUnlessMissing(name, reason, fn, infraRequired() && !infra);
}

/** Runs `fn` as a suite when the collector is built; with REQUIRE_INFRA=1 its absence fails, else the suite is skipped. */
export function describeWithOtelCollector(name: string, fn: () => void): void {
  const missing = otelCollectorBinary() ? undefined : `the OpenTelemetry Collector is not built: run ${OTELCOL_INSTALL}`;
  describeUnlessMissing(name, missing, fn, infraRequired());
}
