export {
  createMetrics,
  defineCounter,
  defineGauge,
  defineHistogram,
  UNMATCHED_ROUTE,
} from './create-metrics';
export type { CreateMetricsOptions, HttpDurationLabels, Metrics } from './create-metrics';
export { DB_POOL_METRIC, observeDbPool } from './db-pool';
