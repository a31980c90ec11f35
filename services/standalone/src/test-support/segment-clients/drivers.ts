import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { Analytics as SegmentAnalytics } from '@segment/analytics-node';
import RudderAnalytics from '@rudderstack/rudder-sdk-node';

/**
 * One tracking call, in the libraries' common terms; each driver makes it
 * through its library's own API (camelCase in Node, snake_case in Python).
 */
export interface Call {
  method: 'identify' | 'track' | 'page' | 'group' | 'alias';
  userId?: string;
  anonymousId?: string;
  event?: string;
  name?: string;
  groupId?: string;
  previousId?: string;
  properties?: Record<string, string | number | boolean>;
  traits?: Record<string, string | number | boolean>;
  /** ISO 8601; a backdated call's own time. */
  timestamp?: string;
}

/** Makes `calls` through a real client library pointed at `host` (`{base_url}/segment`), flushes, and resolves once every batch was delivered; rejects with the library's errors otherwise. */
export type Driver = (host: string, writeKey: string, calls: readonly Call[]) => Promise<void>;

/** Who and when, as the Node libraries take them: a user id, an anonymous id, or both (their types want one of them named). */
const fields = (c: Call) =>
  ({
    ...(c.userId ? { userId: c.userId } : {}),
    ...(c.anonymousId ? { anonymousId: c.anonymousId } : {}),
    ...(c.timestamp ? { timestamp: new Date(c.timestamp) } : {}),
  }) as { userId: string; anonymousId?: string; timestamp?: Date };

/** `@segment/analytics-node` (npm, pinned in package.json). */
export const segmentNode: Driver = async (host, writeKey, calls) => {
  // This library resolves `path` against `host`, so a base path goes into `path` (as its README tells).
  const { origin, pathname } = new URL(host);
  const analytics = new SegmentAnalytics({ writeKey, host: origin, path: `${pathname}/v1/batch`, flushInterval: 100, maxRetries: 2 });
  const errors: unknown[] = [];
  analytics.on('error', (err) => errors.push(err));
  for (const c of calls) {
    const common = fields(c);
    if (c.method === 'identify') analytics.identify({ ...common, traits: c.traits ?? {} });
    if (c.method === 'track') analytics.track({ ...common, event: c.event!, properties: c.properties ?? {} });
    if (c.method === 'page') analytics.page({ ...common, name: c.name!, properties: c.properties ?? {} });
    if (c.method === 'group') analytics.group({ ...common, groupId: c.groupId!, traits: c.traits ?? {} });
    if (c.method === 'alias') analytics.alias({ userId: c.userId!, previousId: c.previousId! });
  }
  await analytics.closeAndFlush({ timeout: 30_000 });
  if (errors.length) throw new Error(`@segment/analytics-node reported: ${errors.map((e) => (e as { reason?: unknown }).reason ?? e).join('; ')}`);
};

/** `@rudderstack/rudder-sdk-node` (npm, pinned in package.json); gzips its batches. */
export const rudderNode: Driver = async (host, writeKey, calls) => {
  const errors: unknown[] = [];
  const analytics = new RudderAnalytics(writeKey, { dataPlaneUrl: host, flushInterval: 100, logLevel: 'error', errorHandler: (err: unknown) => errors.push(err) });
  const sent = calls.map(
    (c) =>
      new Promise<void>((resolve, reject) => {
        const done = (err?: unknown) => (err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve());
        const common = fields(c);
        if (c.method === 'identify') analytics.identify({ ...common, traits: c.traits ?? {} }, done);
        if (c.method === 'track') analytics.track({ ...common, event: c.event!, properties: c.properties ?? {} }, done);
        if (c.method === 'page') analytics.page({ ...common, name: c.name!, properties: c.properties ?? {} }, done);
        if (c.method === 'group') analytics.group({ ...common, groupId: c.groupId!, traits: c.traits ?? {} }, done);
        if (c.method === 'alias') analytics.alias({ userId: c.userId!, previousId: c.previousId! }, done);
      }),
  );
  await analytics.flush();
  await Promise.all(sent);
  if (errors.length) throw new Error(`@rudderstack/rudder-sdk-node reported: ${errors.map(String).join('; ')}`);
};

const INSTALL = path.resolve(__dirname, '../../../../../infra/segment-python/install.sh');

/** The interpreter of the cached virtualenv with segment-analytics-python (installed once, pinned: infra/segment-python). */
export async function segmentPythonInterpreter(): Promise<string> {
  const { stdout } = await promisify(execFile)('bash', [INSTALL], { timeout: 300_000 });
  return stdout.trim().split('\n').at(-1)!;
}

/** Segment's Python library (`segment-analytics-python` from PyPI) in a child process. */
export const segmentPython =
  (python: string): Driver =>
  (host, writeKey, calls) =>
    new Promise((resolve, reject) => {
      const child = spawn(python, [path.join(__dirname, 'segment_python_driver.py')], { stdio: ['pipe', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (b: Buffer) => (out += b.toString()));
      child.stderr.on('data', (b: Buffer) => (out += b.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      child.on('error', reject);
      child.on('close', (code) => {
        clearTimeout(timer);
        if (code === 0) resolve();
        else reject(new Error(`segment-analytics-python exited ${code}: ${out}`));
      });
      const kwargs = calls.map((c) => ({
        method: c.method,
        kwargs: {
          ...(c.userId ? { user_id: c.userId } : {}),
          ...(c.anonymousId ? { anonymous_id: c.anonymousId } : {}),
          ...(c.event ? { event: c.event } : {}),
          ...(c.name ? { name: c.name } : {}),
          ...(c.groupId ? { group_id: c.groupId } : {}),
          ...(c.previousId ? { previous_id: c.previousId } : {}),
          ...(c.properties ? { properties: c.properties } : {}),
          ...(c.traits ? { traits: c.traits } : {}),
          ...(c.timestamp ? { timestamp: c.timestamp } : {}),
        },
      }));
      child.stdin.end(JSON.stringify({ writeKey, host, calls: kwargs }));
    });
