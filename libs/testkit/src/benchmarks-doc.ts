import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** docs/benchmarks.md, where each package's `npm run bench` writes its tables. */
const BENCHMARKS_DOC = path.resolve(__dirname, '../../../docs/benchmarks.md');

/**
 * Replaces what stands between `<!-- name:start -->` and `<!-- name:end -->`
 * in docs/benchmarks.md with `body`, keeping the rest (the prose written
 * around a table included); appends the section when the markers are missing.
 */
export async function writeBenchmarkSection(name: string, body: string): Promise<void> {
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  const doc = await readFile(BENCHMARKS_DOC, 'utf8').catch(() => '# Benchmarks\n');
  const i = doc.indexOf(start);
  const j = doc.indexOf(end);
  const next = i >= 0 && j > i ? `${doc.slice(0, i + start.length)}\n${body}${doc.slice(j)}` : `${doc.trimEnd()}\n\n${start}\n${body}${end}\n`;
  await writeFile(BENCHMARKS_DOC, next);
}
