export { createKafkaBus, type KafkaBus } from './bus';
export type { KafkaBusOptions } from './options';
export { LAG_METRIC } from './lag';
export { valueSubject } from './codec';
