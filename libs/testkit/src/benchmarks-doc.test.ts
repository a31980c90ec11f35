import { describe, expect, it } from '@jest/globals';
import { markdownTable } from './benchmarks-doc';

describe('markdownTable', () => {
  it('puts the caption a blank line above the table and ends with a newline, so that tables joined with a newline stand apart', () => {
    expect(markdownTable('_Measured today._', ['step', 'events/s'], [['quiet', '1,200'], ['open', '900']])).toBe(
      ['_Measured today._', '', '| step | events/s |', '|---|---|', '| quiet | 1,200 |', '| open | 900 |', ''].join('\n'),
    );
  });

  it('writes one separator cell per column and keeps an empty cell empty', () => {
    expect(markdownTable('#### Kafka', ['route', 'p99 ms', 'floor'], [['detail', '3.10', '']])).toBe('#### Kafka\n\n| route | p99 ms | floor |\n|---|---|---|\n| detail | 3.10 |  |\n');
  });

  it('writes the header alone when there are no rows', () => {
    expect(markdownTable('#### none', ['a'], [])).toBe('#### none\n\n| a |\n|---|\n');
  });
});
