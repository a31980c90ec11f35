import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { loadConfig } from '@svc/runtime';
import { standaloneConfigSpec } from './config';

describe('standalone configuration', () => {
  it('documents every variable in the README', () => {
    const readme = readFileSync(path.resolve(__dirname, '../../../README.md'), 'utf8');
    for (const name of Object.keys(standaloneConfigSpec)) expect(readme).toContain(`| \`${name}\` |`);
  });

  it('has working defaults for everything', () => {
    expect(loadConfig(standaloneConfigSpec, {})).toMatchObject({ HOST: '127.0.0.1', PORT: 8080, DATA_DIR: './.data' });
  });

  it('reports every problem at once and never echoes a secret', () => {
    expect(() => loadConfig(standaloneConfigSpec, { PORT: '99999', DATABASE_URL: 'hunter2' })).toThrow(
      /PORT must be an integer from 0 to 65535 \(got "99999"\)[\s\S]*DATABASE_URL must be a URL: /,
    );
    expect(() => loadConfig(standaloneConfigSpec, { DATABASE_URL: 'hunter2' })).not.toThrow(/hunter2/);
  });
});
