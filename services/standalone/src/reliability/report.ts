import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { LoadCounts } from '@svc/testkit';
import type { Verification } from './verify';

/** One scenario's figures, as the table of docs/reliability.md shows them. */
export interface ScenarioFigures {
  id: string;
  title: string;
  /** Seconds the load ran. */
  loadSeconds: number;
  eventsPerSecond: number;
  counts: LoadCounts;
  verification: Verification;
  /** Seconds from the end of the fault until the storage lag was under 2 s for good. */
  recoverySeconds: number | null;
  maxLagSeconds: number;
  /** Longest stretch without an acknowledging 200 (seconds). */
  longestGapSeconds: number;
  /** What was done and scenario-specific figures, for the paragraph. */
  story: string;
  /** The checks that failed, in words (empty: all held; absent: not reported). */
  failures?: string[];
  /** The most frequent answers that did not acknowledge a whole batch, "<status> <body> ×<n>". */
  unacknowledgedAnswers?: string[];
}

const DOC = path.resolve(__dirname, '../../../../docs/reliability.md');

const n = (x: number) => x.toLocaleString('en-US');
const s = (x: number | null) => (x === null ? 'not within the bound' : x.toFixed(1));

export function machine(): string {
  const cpus = os.cpus();
  return `${cpus.length} cores (${cpus[0]?.model.trim() ?? 'unknown CPU'}), ${Math.round(os.totalmem() / 2 ** 30)} GB, Node ${process.version}`;
}

export function reportSection(figures: readonly ScenarioFigures[], wallSeconds: number): string {
  const date = new Date().toISOString().slice(0, 10);
  const lines = [
    `Run of ${date} on ${machine()}, shared with other work; the suite took ${Math.round(wallSeconds)} s of wall time, not counting the test run's global setup.`,
    '',
    '| scenario | checks | acknowledged | lost | duplicated | usage = stored | 503 (with Retry-After) | other 5xx | hangs | longest without a 200 (s) | max lag (s) | seconds to recover |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...figures.map((f) => {
      const v = f.verification;
      const c = f.counts;
      const checks = f.failures === undefined ? '' : f.failures.length === 0 ? 'passed' : `**${f.failures.length} failed**`;
      // Lost: acknowledged by name and not stored, plus what 200s that did not name their failures said they processed beyond what is stored.
      const lost = v.missing + v.ambiguousLost;
      const lostCell = v.ambiguousLost ? `**${n(lost)}** (${n(v.ambiguousLost)} in ${n(v.ambiguousShort)} answers that did not say which)` : lost ? `**${n(lost)}**` : '0';
      return `| ${f.id}. ${f.title} | ${checks} | ${n(v.acknowledged)} | ${lostCell} | ${n(v.duplicated)} | ${v.usage === v.stored ? `yes (${n(v.stored)})` : `**no** (${n(v.usage)} vs ${n(v.stored)})`} | ${n(c.unavailable)} (${n(c.unavailableWithRetryAfter)}) | ${n(c.otherServerErrors)} | ${n(c.hangs)} | ${f.longestGapSeconds.toFixed(1)} | ${f.maxLagSeconds.toFixed(1)} | ${s(f.recoverySeconds)} |`;
    }),
    '',
    ...figures.flatMap((f) => [
      `**${f.id}. ${f.title}.** ${f.story} Load: ${n(f.counts.requests)} requests of ${n(f.counts.sentEvents / Math.max(1, f.counts.requests))} events over ${Math.round(f.loadSeconds)} s (target ${n(f.eventsPerSecond)} events/s); ${n(f.counts.ok)} answered 200` +
        `${f.counts.okPartial ? ` (${n(f.counts.okPartial)} of them with some events refused)` : ''}, ${n(f.counts.unavailable)} answered 503, ${n(f.counts.otherStatuses)} another status, ${n(f.counts.networkErrors)} failed to connect. ` +
        `${n(f.verification.storedUnacknowledged)} events that were not acknowledged were stored as well, which a client's retry with the same messageIds makes harmless.` +
        (f.unacknowledgedAnswers?.length ? ` Answers that did not acknowledge a whole batch: ${f.unacknowledgedAnswers.map((a) => `\`${a.replace(/`/g, "'")}\``).join('; ')}.` : '') +
        (f.failures?.length ? ` **Failed:** ${f.failures.join('; ')}.` : ''),
      '',
    ]),
  ];
  return `${lines.join('\n').trimEnd()}\n`;
}

/**
 * Replaces the generated section `name` of docs/reliability.md (what stands
 * between `<!-- name:start -->` and `<!-- name:end -->`), keeping the prose
 * and the other suites' sections around it; appends it when missing.
 */
export async function writeReport(section: string, name = 'broker-faults'): Promise<void> {
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  const text = await readFile(DOC, 'utf8').catch(() => '# Reliability\n');
  const i = text.indexOf(start);
  const j = text.indexOf(end);
  const next = i >= 0 && j > i ? `${text.slice(0, i + start.length)}\n${section}${text.slice(j)}` : `${text.trimEnd()}\n\n${start}\n${section}${end}\n`;
  await writeFile(DOC, next);
}
