import type { TSchema } from '@sinclair/typebox';
import * as contracts from '@svc/contracts';

/** A JSON value (what a schema becomes once written out). */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * The contracts' named schemas (every `…Schema` export), by identity:
 * TypeBox composes by reference, so a schema embedded in another is the
 * very object exported, and can be written once under
 * `#/components/schemas/<name>` and referenced wherever it is used.
 */
const NAMES = new Map<unknown, string>(
  Object.entries(contracts)
    .filter(([name, value]) => name.endsWith('Schema') && typeof value === 'object' && value !== null)
    .map(([name, value]) => [value, name.slice(0, -'Schema'.length)]),
);

/** Writes contracts schemas as document JSON, named ones as `$ref`s, and collects the components they need. */
export class SchemaWriter {
  private readonly components = new Map<string, Json>();

  /** `schema` as JSON Schema, with every named schema in it (itself included) a reference. */
  write(schema: TSchema): Json {
    return this.convert(schema, true);
  }

  /** Every named schema referenced so far, written out, in name order. */
  componentSchemas(): Record<string, Json> {
    return Object.fromEntries([...this.components.entries()].sort(([a], [b]) => a.localeCompare(b)));
  }

  private convert(value: unknown, mayReference: boolean): Json {
    const name = NAMES.get(value);
    if (name !== undefined && mayReference) {
      if (!this.components.has(name)) {
        this.components.set(name, {}); // placeholder: a schema that (indirectly) contains itself stops here
        this.components.set(name, this.convert(value, false));
      }
      return { $ref: `#/components/schemas/${name}` };
    }
    if (Array.isArray(value)) return value.map((v) => this.convert(v, true));
    if (value === null || typeof value !== 'object') return value as Json;
    // Own string keys only: TypeBox's symbols are not JSON; `$id`s would give embedded schemas identities of their own.
    return Object.fromEntries(
      Object.entries(value)
        .filter(([key, v]) => key !== '$id' && v !== undefined)
        .map(([key, v]) => [key, this.convert(v, true)]),
    );
  }
}
