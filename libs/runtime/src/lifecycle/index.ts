export { DEFAULT_STEP_TIMEOUT_MS, Lifecycle } from './lifecycle';
export { RepeatingDrain } from './drain';
export type {
  LifecycleOptions,
  ShutdownReport,
  ShutdownStepOutcome,
  ShutdownStepResult,
  SignalTarget,
} from './lifecycle';
