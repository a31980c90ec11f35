import { describe, expect, it } from '@jest/globals';
import { createLogger, REDACTION_CENSOR } from './create-logger';

function capture(level: 'info' | 'warn' = 'info') {
  const lines: string[] = [];
  const logger = createLogger({ name: 'redaction-test', level, destination: { write: (line: string) => lines.push(line) } });
  return { logger, lines };
}

const SECRET = 'uk_live_s3cr3t-value-that-must-not-leak';

describe('createLogger redaction', () => {
  const cases: Array<{ name: string; payload: Record<string, unknown> }> = [
    { name: 'req.headers.authorization', payload: { req: { headers: { authorization: `Bearer ${SECRET}` } } } },
    { name: 'req.headers.cookie', payload: { req: { headers: { cookie: `session=${SECRET}` } } } },
    { name: 'authorization', payload: { authorization: `Bearer ${SECRET}` } },
    { name: 'headers.authorization', payload: { headers: { authorization: `Bearer ${SECRET}` } } },
    { name: '*.authorization', payload: { upstream: { authorization: SECRET } } },
    { name: 'key', payload: { key: SECRET } },
    { name: '*.key', payload: { apiKey: { key: SECRET } } },
    { name: 'apiKey', payload: { apiKey: SECRET } },
    { name: '*.password', payload: { db: { password: SECRET } } },
    { name: 'password', payload: { password: SECRET } },
    { name: '*.secret', payload: { connector: { secret: SECRET } } },
    { name: '*.token', payload: { oauth: { token: SECRET } } },
    { name: 'token', payload: { token: SECRET } },
  ];

  it.each(cases)('hides $name', ({ payload }) => {
    const { logger, lines } = capture();
    logger.info(payload, 'something happened');
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain(SECRET);
    expect(lines[0]).toContain(REDACTION_CENSOR);
  });

  it('hides secrets in child-logger bindings too', () => {
    const { logger, lines } = capture();
    logger.child({ db: { password: SECRET } }).info('connected');
    expect(lines[0]).not.toContain(SECRET);
  });

  it('keeps everything else', () => {
    const { logger, lines } = capture();
    logger.info({ requestId: 'r-1', route: '/functions/v1/v1-batch', req: { headers: { 'user-agent': 'curl' } } }, 'hello');
    const line = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(line).toMatchObject({
      name: 'redaction-test',
      level: 'info',
      msg: 'hello',
      requestId: 'r-1',
      route: '/functions/v1/v1-batch',
      req: { headers: { 'user-agent': 'curl' } },
    });
    expect(typeof line.time).toBe('string');
  });

  it('respects the level', () => {
    const { logger, lines } = capture('warn');
    logger.info('dropped');
    logger.warn('kept');
    expect(lines.map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual(['kept']);
  });
});
