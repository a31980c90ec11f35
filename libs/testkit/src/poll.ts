/**
 * Asks `probe` again every `everyMs` until it answers something other than
 * undefined, and returns that answer; fails once `withinMs` has passed.
 */
export async function pollForValue<T>(probe: () => Promise<T | undefined>, { withinMs, everyMs }: { withinMs: number; everyMs: number }): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
