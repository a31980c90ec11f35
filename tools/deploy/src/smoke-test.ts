import { readFileSync } from 'node:fs';
import https from 'node:https';
import { randomUUID } from 'node:crypto';
import { env, loadConfigOrExit } from '@svc/runtime';
import { AccountsStore } from '@svc/accounts';
import { jobConfigSpec, openJobDatabase, type Environment } from './job-config';

/** The Helm chart's test pod reads these (templates/tests/smoke-test.yaml). */
const configSpec = {
  ...jobConfigSpec,
  SMOKE_BASE_URL: env.string({ description: 'the API base URL the test calls, e.g. https://svc.example.com/functions/v1' }),
  SMOKE_CONNECT_TO: env.optionalString({ description: 'host or host:port to connect to instead of the base URL host (still named for TLS and Host:)' }),
  SMOKE_CA_FILE: env.optionalString({ description: 'PEM file: the CA of the edge certificate' }),
  SMOKE_ORGANIZATION_ID: env.optionalString({ description: 'organisation whose keys the test makes; unset: a new one' }),
  SMOKE_ORGANIZATION_NAME: env.string({ description: 'name of the organisation the test makes', default: 'smoke test' }),
  SMOKE_TIMEOUT_SECONDS: env.int({ description: 'how long to wait for the profile', default: 120, min: 1 }),
};

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/**
 * `smoke-test`: what a client does, through the edge, end to end. Makes a
 * write and a read key, posts an identify through the base URL over TLS,
 * polls the Profiles API until the profile is readable, reads it by id, and
 * revokes both keys whatever happened. Exit 0 when every step answered as the
 * interface says; 1 with the step that did not.
 */
export async function smokeTestCommand(environment: Environment): Promise<number> {
  const config = loadConfigOrExit(configSpec, environment);
  const { logger, db } = await openJobDatabase(config, 'smoke-test', 1);
  const accounts = new AccountsStore(db);
  const keyIds: string[] = [];
  try {
    const orgId = config.SMOKE_ORGANIZATION_ID ?? (await accounts.createOrganization({ name: config.SMOKE_ORGANIZATION_NAME })).id;
    const write = await accounts.createApiKey({ orgId, type: 'write' });
    keyIds.push(write.record.id);
    const read = await accounts.createApiKey({ orgId, type: 'read' });
    keyIds.push(read.record.id);

    const call = edgeClient(config.SMOKE_BASE_URL, config.SMOKE_CONNECT_TO, config.SMOKE_CA_FILE ? readFileSync(config.SMOKE_CA_FILE, 'utf8') : undefined);
    const userId = `smoke-${randomUUID()}`;
    const batch = { batch: [{ type: 'identify', messageId: randomUUID(), anonymousId: `anon-${userId}`, userId, timestamp: new Date().toISOString() }] };
    const posted = await call('POST', '/v1-batch', write.key, batch);
    expectAnswer('POST /v1-batch', posted, 200, (b) => b.success === true && b.processed === 1);
    logger.info({ orgId, userId }, 'batch accepted through the edge');

    let found: Answer = { status: 0, body: {} };
    const deadline = Date.now() + config.SMOKE_TIMEOUT_SECONDS * 1_000;
    while (Date.now() < deadline) {
      found = await call('GET', `/v1-profiles/search?user_id=${encodeURIComponent(userId)}`, read.key);
      if (found.status !== 200 || (found.body.count as number) > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expectAnswer('GET /v1-profiles/search', found, 200, (b) => b.count === 1);
    const id = (found.body.profiles as { id: string }[])[0]!.id;
    const profile = await call('GET', `/v1-profiles/${encodeURIComponent(id)}`, read.key);
    expectAnswer(`GET /v1-profiles/${id}`, profile, 200, (b) => JSON.stringify(b).includes(userId));
    logger.info({ orgId, profileId: id }, 'profile read back through the edge');
    return 0;
  } catch (err) {
    logger.error({ err: (err as Error).message }, 'smoke test failed');
    return 1;
  } finally {
    for (const id of keyIds) await accounts.revokeApiKey(id).catch((err: unknown) => logger.warn({ err: (err as Error).message, keyId: id }, 'could not revoke a test key'));
    await db.destroy();
  }
}

function expectAnswer(step: string, answer: Answer, status: number, holds: (body: Record<string, unknown>) => boolean): void {
  if (answer.status !== status || !holds(answer.body)) {
    throw new Error(`${step} answered ${answer.status} ${JSON.stringify(answer.body).slice(0, 500)}`);
  }
}

/** Requests to `baseUrl` over https, connecting to `connectTo` when given while naming the base URL's host (the cluster test calls its Ingress with it too). */
export function edgeClient(baseUrl: string, connectTo: string | undefined, ca: string | undefined) {
  const base = new URL(baseUrl);
  if (base.protocol !== 'https:') throw new Error(`SMOKE_BASE_URL must be https:// (the edge terminates TLS): ${baseUrl}`);
  const [connectHost, connectPort] = connectTo ? splitHostPort(connectTo) : [base.hostname, base.port];
  return (method: string, route: string, key: string, body?: unknown): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const request = https.request(
        {
          host: connectHost,
          port: Number(connectPort || 443),
          servername: base.hostname,
          ca,
          method,
          path: `${base.pathname.replace(/\/$/, '')}${route}`,
          headers: {
            host: base.host,
            authorization: `Bearer ${key}`,
            ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
          },
          timeout: 15_000,
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: Record<string, unknown>;
            try {
              parsed = JSON.parse(text) as Record<string, unknown>;
            } catch {
              parsed = { text: text.slice(0, 200) };
            }
            resolve({ status: response.statusCode ?? 0, body: parsed });
          });
        },
      );
      request.on('timeout', () => request.destroy(new Error(`${method} ${route}: no answer within 15 s`)));
      request.on('error', reject);
      request.end(payload);
    });
}

function splitHostPort(value: string): [string, string] {
  const match = /^\[?([^\]]+?)\]?(?::(\d+))?$/.exec(value);
  if (!match) throw new Error(`SMOKE_CONNECT_TO must be host or host:port: ${value}`);
  return [match[1]!, match[2] ?? ''];
}
