export { DEFAULT_STEP_TIMEOUT_MS, Lifecycle } from './lifecycle';
export type {
  LifecycleOptions,
  ShutdownReport,
  ShutdownStepOutcome,
  ShutdownStepResult,
  SignalTarget,
} from './lifecycle';
