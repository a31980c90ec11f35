/** `name=value` items (a bench knob's list: settings, extra environment) as an object; the value may hold `=`. */
export function nameValues(items: readonly string[]): Record<string, string> {
  return Object.fromEntries(items.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
}
