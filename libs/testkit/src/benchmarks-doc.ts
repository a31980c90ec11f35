import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** docs/, where `npm run bench` and `npm run fuzz` write their figures. */
const DOCS = path.resolve(__dirname, '../../../docs');

/**
 * Replaces what stands between `<!-- name:start -->` and `<!-- name:end -->`
 * in docs/`file` with `body`, keeping the rest (the prose written around a
 * table included); appends the section when the markers are missing.
 */
export async function writeDocSection(file: 'benchmarks.md' | 'fuzz.md', name: string, body: string): Promise<void> {
  const doc = path.join(DOCS, file);
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  const text = await readFile(doc, 'utf8').catch(() => `# ${file.replace(/\.md$/, '')}\n`);
  const i = text.indexOf(start);
  const j = text.indexOf(end);
  const next = i >= 0 && j > i ? `${text.slice(0, i + start.length)}\n${body}${text.slice(j)}` : `${text.trimEnd()}\n\n${start}\n${body}${end}\n`;
  await writeFile(doc, next);
}

/**
 * A bench's table for docs/benchmarks.md: the caption paragraph (what was
 * measured, how), a blank line, the markdown table, and a closing newline,
 * so that tables joined with '\n' stand a blank line apart. The separator row
 * is derived from `header`, so it always has one cell per column.
 */
export function markdownTable(caption: string, header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [caption, '', line(header), `|${'---|'.repeat(header.length)}`, ...rows.map(line), ''].join('\n');
}
