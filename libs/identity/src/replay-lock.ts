import type { Db } from '@svc/runtime';

/**
 * Every transaction that writes the identity projections takes this lock
 * shared; a replay takes it exclusively for the whole rebuild, so writers
 * wait (the log keeps their input) instead of writing into tables that are
 * about to be replaced.
 */
const REPLAY_LOCK = 'svc:identity-replay';

/** holdOffReplay as an SQL expression, to take the lock within a statement of the caller's. */
export const HOLD_OFF_REPLAY = `pg_advisory_xact_lock_shared(hashtext('${REPLAY_LOCK}'))`;

export async function holdOffReplay(trx: Db): Promise<void> {
  await trx.raw(`select ${HOLD_OFF_REPLAY}`);
}

export async function excludeWriters(trx: Db): Promise<void> {
  await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [REPLAY_LOCK]);
}
