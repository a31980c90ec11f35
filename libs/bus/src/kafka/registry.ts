import { Agent } from 'node:https';
import { SchemaRegistryClient, type SchemaInfo, type SchemaMetadata } from '@confluentinc/schemaregistry';
import type { RegistryAccess } from './options';

/**
 * The registry client, with the two look-ups the serdes make for every
 * message answered from plain maps. The stock client caches them too, but
 * keys its caches with a deterministic JSON of the whole schema and guards
 * them with a mutex: measured, that made the serde itself cap at about
 * 5,000 messages/s per core for 1 KB messages. Schema ids never change
 * meaning, so remembering an answer is always right; failures are not kept.
 */
export class MemoizingRegistryClient extends SchemaRegistryClient {
  private readonly byId = new Map<string, Promise<SchemaInfo>>();
  private readonly idOf = new WeakMap<SchemaInfo, Map<string, Promise<SchemaMetadata>>>();

  static connect(url: string, timeoutMs: number, access: RegistryAccess = {}): MemoizingRegistryClient {
    return new MemoizingRegistryClient({
      baseURLs: [url],
      maxRetries: 2,
      retriesWaitMs: 100,
      retriesMaxWaitMs: 1_000,
      createAxiosDefaults: { timeout: timeoutMs, ...(access.ca ? { httpsAgent: new Agent({ ca: access.ca, keepAlive: true }) } : {}) },
      ...(access.username ? { basicAuthCredentials: { credentialsSource: 'USER_INFO', userInfo: `${access.username}:${access.password ?? ''}` } } : {}),
    });
  }

  override getBySubjectAndId(subject: string, id: number, format?: string): Promise<SchemaInfo> {
    return remember(this.byId, `${subject}\n${id}\n${format ?? ''}`, () => super.getBySubjectAndId(subject, id, format));
  }

  /** The serializer asks with the very SchemaInfo getBySubjectAndId gave it, so its identity is the key. */
  override getIdFullResponse(subject: string, schema: SchemaInfo, normalize?: boolean): Promise<SchemaMetadata> {
    let answers = this.idOf.get(schema);
    if (!answers) {
      answers = new Map();
      this.idOf.set(schema, answers);
    }
    return remember(answers, `${subject}\n${normalize === true}`, () => super.getIdFullResponse(subject, schema, normalize));
  }

  override clearCaches(): void {
    this.byId.clear();
    super.clearCaches();
  }
}

function remember<T>(cache: Map<string, Promise<T>>, key: string, load: () => Promise<T>): Promise<T> {
  let answer = cache.get(key);
  if (!answer) {
    const loading = load();
    loading.catch(() => {
      if (cache.get(key) === loading) cache.delete(key);
    });
    cache.set(key, loading);
    answer = loading;
  }
  return answer;
}
