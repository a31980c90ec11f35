/** Stops whatever the global setup started (it left its stop function on globalThis). */
export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __svcInfraStop?: () => Promise<void> }).__svcInfraStop?.();
}
