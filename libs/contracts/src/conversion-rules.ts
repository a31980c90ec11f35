/**
 * The spec's conversion qualification rule, shared by the identity resolver
 * (which decides what goes on conversions.candidates) and the conversion
 * forwarder (which decides, per connector, what is sent).
 */

/** Qualifying names when a connector carries no custom set; each may also be sent with a `$`. */
export const DEFAULT_CONVERSION_NAMES = ['purchase', 'sign_up', 'add_to_cart', 'initiate_checkout', 'lead', 'subscribe'] as const;

export const DEFAULT_QUALIFYING_NAMES: ReadonlySet<string> = new Set(DEFAULT_CONVERSION_NAMES.flatMap((n) => [n, `$${n}`]));

/**
 * Exact, case-sensitive name match. A custom set replaces the defaults
 * entirely and matches its names exactly as written (no implied `$`
 * variants); null means the defaults. `Purchase Completed` and `Purchase` do
 * not match `purchase`.
 */
export function qualifiesAsConversion(eventName: string, names?: ReadonlySet<string> | null): boolean {
  return (names ?? DEFAULT_QUALIFYING_NAMES).has(eventName);
}
