import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { CHART_DIR, renderChartReadme, valueRows, valuesTable } from './test-support/chart-readme';

const README = path.join(CHART_DIR, 'README.md');
const values = readFileSync(path.join(CHART_DIR, 'values.yaml'), 'utf8');

describe('the chart README', () => {
  it('has the values table values.yaml gives (`npm run chart-readme` writes it)', () => {
    const committed = readFileSync(README, 'utf8');
    const generated = renderChartReadme(committed, values);
    if (process.env.CHART_README_WRITE === '1') writeFileSync(README, generated);
    else expect(committed).toBe(generated);
  });

  it('explains every value: its own comment, or one on a map it lies in', () => {
    expect(valueRows(values).filter((row) => !row.documented).map((row) => row.key)).toEqual([]);
  });

  it('lists the values users of well-kept charts look for', () => {
    const keys = valueRows(values).map((row) => row.key);
    for (const key of ['serviceAccount.create', 'serviceAccount.automount', 'extraEnv', 'extraEnvFrom', 'extraVolumes', 'extraVolumeMounts', 'config.trustedProxies', 'networkPolicy.enabled', 'ingestGateway.resources.requests', 'tests.enabled']) {
      expect(keys).toContain(key);
    }
  });
});

describe('the generator', () => {
  const sample = ['# header of the file', '', 'a:', '  # first key, whose comment yaml gives the map', '  b: 1', '  # a list', '  c: [x]', '  d: { e: 1 }', 'f: ""', ''].join('\n');

  it('reads each value with the comment above it, and a map\'s first key its comment too', () => {
    expect(valueRows(sample)).toEqual([
      { key: 'a.b', value: 1, description: 'first key, whose comment yaml gives the map', documented: true },
      { key: 'a.c', value: ['x'], description: 'a list', documented: true },
      { key: 'a.d', value: { e: 1 }, description: '', documented: false },
      { key: 'f', value: '', description: '', documented: false },
    ]);
  });

  it('fails to render without the markers, and escapes pipes', () => {
    expect(() => renderChartReadme('# no table here', sample)).toThrow('section');
    expect(valuesTable([{ key: 'k', value: 'a|b', description: 'x | y', documented: true }])).toContain('`"a\\|b"` | x \\| y |');
  });
});
