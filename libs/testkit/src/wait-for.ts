/** Polls `cond` every 10 ms until it holds; fails naming `what` after `ms`. */
export async function waitFor(what: string, cond: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A promise a test's handler blocks on until the test resolves it. */
export interface Gate {
  promise: Promise<void>;
  resolve(): void;
}

/**
 * The gates a suite hands its handlers. releaseAll after each test opens
 * every one still closed: a failed test must not leave a handler blocked,
 * or the bus's close, which waits for the batch in hand, would never end.
 */
export class Gates {
  private readonly closed: Array<() => void> = [];

  gate(): Gate {
    let resolve = () => {};
    const promise = new Promise<void>((r) => (resolve = r));
    this.closed.push(resolve);
    return { promise, resolve };
  }

  releaseAll(): void {
    for (const release of this.closed.splice(0)) release();
  }
}
