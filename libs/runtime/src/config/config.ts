import { readFileSync } from 'node:fs';

/**
 * Configuration is read once, in a service's composition root, from the
 * environment. Every variable is declared with its type, default and a sentence
 * that tells the operator what to set; problems are reported together, at start.
 */

type Kind = 'string' | 'int' | 'bool' | 'list' | 'url' | 'enum';

interface VarBase<T> {
  kind: Kind;
  description: string;
  /** Omit for a required variable. */
  default?: T;
  /** Never echo the value in error messages or logs. */
  secret?: boolean;
  /** For enums. */
  values?: readonly string[];
  min?: number;
  max?: number;
  parse(raw: string): T | Error;
}

export type VarSpec<T> = VarBase<T>;
/** The parsed configuration of a spec. */
export type ConfigValues<S> = { readonly [K in keyof S]: S[K] extends VarSpec<infer T> ? T : never };

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

interface Options<T> {
  description: string;
  default?: T;
  secret?: boolean;
}

export const env = {
  string: (o: Options<string>): VarSpec<string> => ({
    kind: 'string',
    ...o,
    parse: (raw) => raw,
  }),
  /** Optional string without a default: undefined when unset. */
  optionalString: (o: Omit<Options<string>, 'default'>): VarSpec<string | undefined> => ({
    kind: 'string',
    ...o,
    default: undefined,
    parse: (raw) => raw,
  }),
  int: (o: Options<number> & { min?: number; max?: number }): VarSpec<number> => ({
    kind: 'int',
    ...o,
    parse(raw) {
      const n = Number(raw);
      if (!/^-?\d+$/.test(raw.trim()) || !Number.isSafeInteger(n)) return new Error('an integer');
      if ((o.min !== undefined && n < o.min) || (o.max !== undefined && n > o.max)) {
        return new Error(`an integer from ${o.min ?? '-∞'} to ${o.max ?? '∞'}`);
      }
      return n;
    },
  }),
  bool: (o: Options<boolean>): VarSpec<boolean> => ({
    kind: 'bool',
    ...o,
    parse(raw) {
      const v = raw.trim().toLowerCase();
      if (['1', 'true', 'yes', 'on'].includes(v)) return true;
      if (['0', 'false', 'no', 'off', ''].includes(v)) return false;
      return new Error('true or false');
    },
  }),
  list: (o: Options<string[]>): VarSpec<string[]> => ({
    kind: 'list',
    ...o,
    parse: (raw) =>
      raw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
  }),
  url: (o: Options<string | undefined>): VarSpec<string | undefined> => ({
    kind: 'url',
    ...o,
    parse(raw) {
      try {
        new URL(raw);
        return raw;
      } catch {
        return new Error('a URL');
      }
    },
  }),
  enum: <V extends string>(values: readonly V[], o: Options<V>): VarSpec<V> => ({
    kind: 'enum',
    ...o,
    values,
    parse: (raw) => ((values as readonly string[]).includes(raw) ? (raw as V) : new Error(`one of ${values.join(', ')}`)),
  }),
  /** Optional enum without a default: undefined when unset. */
  optionalEnum: <V extends string>(values: readonly V[], o: Omit<Options<V>, 'default'>): VarSpec<V | undefined> => ({
    ...env.enum(values, o),
    default: undefined,
  }),
};

/**
 * Parses `source` (normally process.env) against `spec` into a frozen object.
 * A secret variable `X` may instead be given as `X_FILE`, the path of a file
 * holding it (a mounted Kubernetes or compose secret), so a secret never has
 * to sit in the environment or on a command line; one trailing newline is
 * dropped. Throws ConfigError naming every variable that is missing or
 * malformed.
 */
export function loadConfig<S extends Record<string, VarSpec<unknown>>>(
  spec: S,
  source: Record<string, string | undefined>,
): ConfigValues<S> {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, v] of Object.entries(spec)) {
    const raw = v.secret ? secretValue(name, source, problems) : source[name];
    if (raw === unreadable) continue;
    if (raw === undefined || raw === '') {
      if (!('default' in v)) problems.push(`${name} is required: ${v.description}`);
      else out[name] = v.default;
      continue;
    }
    const parsed = v.parse(raw);
    if (parsed instanceof Error) {
      const shown = v.secret ? '' : ` (got ${JSON.stringify(raw.slice(0, 100))})`;
      problems.push(`${name} must be ${parsed.message}${shown}: ${v.description}`);
    } else {
      out[name] = parsed;
    }
  }
  if (problems.length) throw new ConfigError(problems);
  return Object.freeze(out) as ConfigValues<S>;
}

const unreadable = Symbol('unreadable');

/** A secret's value from `name` or from the file `name_FILE` names (never both); a problem is recorded, not thrown. */
function secretValue(name: string, source: Record<string, string | undefined>, problems: string[]): string | undefined | typeof unreadable {
  const file = source[`${name}_FILE`];
  if (file === undefined || file === '') return source[name];
  if (source[name] !== undefined && source[name] !== '') {
    problems.push(`${name} and ${name}_FILE are both set: set one`);
    return unreadable;
  }
  try {
    return readFileSync(file, 'utf8').replace(/\r?\n$/, '');
  } catch (err) {
    problems.push(`${name}_FILE must name a readable file (${(err as NodeJS.ErrnoException).code ?? 'unreadable'}: ${file})`);
    return unreadable;
  }
}

/**
 * For composition roots: the parsed configuration, or the process exits with
 * status 78 (EX_CONFIG) after printing every problem, naming each variable.
 */
export function loadConfigOrExit<S extends Record<string, VarSpec<unknown>>>(
  spec: S,
  source: Record<string, string | undefined>,
): ConfigValues<S> {
  try {
    return loadConfig(spec, source);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(78);
  }
}
