/** How many rows a raw statement changed (pg's rowCount; 0 when it reports none). */
export const rowCount = (r: unknown): number => (r as { rowCount?: number }).rowCount ?? 0;
