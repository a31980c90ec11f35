import { identityConfigSpec } from '@svc/identity';
import { env, type VarSpec } from '@svc/runtime';
import { MIN_CURSOR_SECRET_LENGTH } from './cursor';

const cursorSecret: VarSpec<string | undefined> = {
  ...env.optionalString({
    description: `Key (at least ${MIN_CURSOR_SECRET_LENGTH} characters) that signs the Profiles API events cursors; the same on every replica. Unset: a random key per process, so cursors break on restart`,
    secret: true,
  }),
  parse: (raw) => (raw.length >= MIN_CURSOR_SECRET_LENGTH ? raw : new Error(`at least ${MIN_CURSOR_SECRET_LENGTH} characters`)),
};

/** Settings only the Profiles API has; a composition root (its own main, or the standalone stack) spreads them in. */
export const profileApiOwnConfigSpec = {
  CURSOR_SECRET: cursorSecret,
  ...identityConfigSpec,
};
