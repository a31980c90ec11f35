import { env, parseSecretKey, secretKeyFromDataDir, type Db } from '@svc/runtime';
import { IdentifierHashes } from './hash';
import { checkIdentifierHashKeys } from './rehash';
import { MasterKeyRing } from './subject-keys';

const DESCRIPTION = 'Master key that wraps the data keys sealing the raw log (32 bytes: 64 hex digits or base64); the gateway, the resolver and svcctl need the same one';

/** The raw log's master keys, where a DATA_DIR can keep one (the standalone stack, svcctl). */
export const rawLogKeyConfigSpec = {
  RAW_LOG_MASTER_KEY: env.optionalString({ description: `${DESCRIPTION}; unset: a key generated once and kept in DATA_DIR`, secret: true }),
  RAW_LOG_MASTER_KEYS_RETIRED: env.list({
    description: 'Earlier master keys, comma-separated, that still open data keys not yet wrapped again under RAW_LOG_MASTER_KEY (svcctl keys rewrap); drop one once svcctl keys status shows no key under it',
    default: [],
    secret: true,
  }),
};

/** The same for a service on its own: it has no DATA_DIR to keep a key in, so the key must be given. */
export const requiredRawLogKeyConfigSpec = {
  ...rawLogKeyConfigSpec,
  RAW_LOG_MASTER_KEY: env.string({ description: DESCRIPTION, secret: true }),
};

export interface RawLogKeySettings {
  RAW_LOG_MASTER_KEY?: string | undefined;
  RAW_LOG_MASTER_KEYS_RETIRED: readonly string[];
}

/** The configured master keys; with no RAW_LOG_MASTER_KEY, the one kept in `dataDir` (made there once). */
export async function masterKeyRing(config: RawLogKeySettings, dataDir?: string): Promise<MasterKeyRing> {
  const name = 'RAW_LOG_MASTER_KEY';
  let current: Buffer;
  if (config.RAW_LOG_MASTER_KEY) current = parseSecretKey(config.RAW_LOG_MASTER_KEY, name);
  else if (dataDir !== undefined) current = await secretKeyFromDataDir(dataDir, 'raw-log-master.key', name);
  else throw new Error(`${name} is required`);
  return new MasterKeyRing(
    current,
    config.RAW_LOG_MASTER_KEYS_RETIRED.map((k) => parseSecretKey(k, 'each of RAW_LOG_MASTER_KEYS_RETIRED')),
  );
}

const HASH_KEYS_DESCRIPTION =
  'Keys of the identifier hashes (suppressions, erasure requests, raw-log keys, the audit log, tombstones), comma-separated, oldest first, each 32 bytes (64 hex digits or base64); every service and svcctl need the same list; rotate by appending one, never remove one';

/** The identifier hashes' keys, where a DATA_DIR can keep one (the standalone stack, svcctl). */
export const identifierHashConfigSpec = {
  IDENTIFIER_HASH_KEYS: env.list({ description: `${HASH_KEYS_DESCRIPTION}; unset: one key generated once and kept in DATA_DIR`, default: [], secret: true }),
};

/** The same for a service on its own: it has no DATA_DIR to keep a key in, so the keys must be given. */
export const requiredIdentifierHashConfigSpec = {
  IDENTIFIER_HASH_KEYS: env.list({ description: HASH_KEYS_DESCRIPTION, secret: true }),
};

/** The configured identifier hash keys, checked against the database's (checkIdentifierHashKeys); with none, the one kept in `dataDir`. */
export async function checkedIdentifierHashes(db: Db, config: { IDENTIFIER_HASH_KEYS: readonly string[] }, dataDir?: string): Promise<IdentifierHashes> {
  const hashes = await identifierHashes(config, dataDir);
  await checkIdentifierHashKeys(db, hashes);
  return hashes;
}

/** The configured identifier hash keys; with none, the one kept in `dataDir` (made there once). */
export async function identifierHashes(config: { IDENTIFIER_HASH_KEYS: readonly string[] }, dataDir?: string): Promise<IdentifierHashes> {
  const name = 'IDENTIFIER_HASH_KEYS';
  if (config.IDENTIFIER_HASH_KEYS.length > 0) return new IdentifierHashes(config.IDENTIFIER_HASH_KEYS.map((k) => parseSecretKey(k, `each of ${name}`)));
  if (dataDir !== undefined) return new IdentifierHashes([await secretKeyFromDataDir(dataDir, 'identifier-hash.key', name)]);
  throw new Error(`${name} is required`);
}
