/**
 * What a checked configuration document (engagement rules, identity rules)
 * reports: every problem, each with its JSON path, so an operator mends the
 * whole file at once. svcctl stores a document only when it has none.
 */

/** One problem of a document: where (`$.rules[2].points`) and what. */
export interface DocumentProblem {
  path: string;
  message: string;
}

/** `path: message`, as the CLI lists problems. */
export const formatProblem = (p: DocumentProblem): string => `${p.path}: ${p.message}`;

export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Collects problems; `fields` reports keys outside `allowed`. */
export class Problems {
  readonly list: DocumentProblem[] = [];
  add(path: string, message: string): void {
    this.list.push({ path, message });
  }
  fields(value: Record<string, unknown>, path: string, allowed: readonly string[]): void {
    for (const key of Object.keys(value)) {
      if (!allowed.includes(key)) this.add(`${path}.${key.slice(0, 64)}`, `unknown field (allowed: ${allowed.join(', ')})`);
    }
  }
}
