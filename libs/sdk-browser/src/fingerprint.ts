import type { WindowLike } from './dom';

/** 53-bit string hash (cyrb53), as 14 hex digits. Not cryptographic: it only has to be stable and well spread. */
export function hash53(text: string, seed = 0): string {
  let h1 = 0xdeadbeef ^ seed;
  let h2 = 0x41c6ce57 ^ seed;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(16).padStart(14, '0');
}

/**
 * A device fingerprint from stable, low-entropy browser properties (no canvas,
 * audio or font probing). Computed only when fingerprinting is enabled and
 * consented to.
 */
export function computeFingerprint(win: WindowLike): { hash: string; components: Record<string, unknown> } {
  const nav = win.navigator;
  const scr = win.screen;
  let tz: string | undefined;
  try {
    tz = Intl.DateTimeFormat().resolvedOptions().timeZone;
  } catch {
    tz = undefined;
  }
  const components: Record<string, unknown> = {
    userAgent: nav?.userAgent,
    language: nav?.language,
    languages: nav?.languages ? [...nav.languages] : undefined,
    platform: nav?.platform,
    vendor: nav?.vendor,
    hardwareConcurrency: nav?.hardwareConcurrency,
    deviceMemory: nav?.deviceMemory,
    maxTouchPoints: nav?.maxTouchPoints,
    screen: scr ? `${scr.width}x${scr.height}x${scr.colorDepth}` : undefined,
    devicePixelRatio: win.devicePixelRatio,
    timezone: tz,
  };
  return { hash: hash53(JSON.stringify(components)), components };
}
