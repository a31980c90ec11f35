import { readToEnd } from '@svc/bus';
import type { RawLogMessage } from '@svc/contracts';
import { replayProjections, type ReplayOptions, type ReplayReport } from '../replay';
import type { Harness } from './harness';

/**
 * A replay of the harness's whole raw log into fresh projections, as an operator
 * would start one; `maxBatchSize` makes it read the log in small batches, `keys`
 * stands in another key reader (the harness's by default).
 */
export function replayHarnessLog(
  h: Harness,
  label: string,
  options: { maxBatchSize?: number; keys?: ReplayOptions['keys'] } = {},
): Promise<ReplayReport> {
  const { maxBatchSize, keys = h.keyReader() } = options;
  return replayProjections({
    db: h.db,
    logger: h.logger,
    label,
    keys,
    batch: { hashes: h.hashes },
    source: (consume) => readToEnd<RawLogMessage>(h.bus, h.topics.eventsRaw, (ms) => consume(ms.map((m) => m.value)), { maxBatchSize }),
  });
}
