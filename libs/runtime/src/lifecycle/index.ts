export { DEFAULT_STEP_TIMEOUT_MS, Lifecycle } from './lifecycle';
export { RepeatingDrain } from './drain';
export { SERVICE_NODE_FLAGS } from './node-flags';
export type {
  LifecycleOptions,
  ShutdownReport,
  ShutdownStepOutcome,
  ShutdownStepResult,
  SignalTarget,
} from './lifecycle';
