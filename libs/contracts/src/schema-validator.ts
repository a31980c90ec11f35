import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import type { Static, TSchema } from '@sinclair/typebox';
import { schemaFormats } from './formats';

const ajv = new Ajv({ allErrors: false, strict: false, formats: schemaFormats });
const compiled = new WeakMap<TSchema, ValidateFunction>();
/** The same schemas, reporting every violation rather than the first (for choosing which to report). */
const ajvAll = new Ajv({ allErrors: true, strict: false, formats: schemaFormats });
const compiledAll = new WeakMap<TSchema, ValidateFunction>();

/** Compiles (once) and returns a validator for a contracts schema. */
export function validatorFor<S extends TSchema>(schema: S): (value: unknown) => value is Static<S> {
  let fn = compiled.get(schema);
  if (!fn) {
    fn = ajv.compile(schema);
    compiled.set(schema, fn);
  }
  return fn as (value: unknown) => value is Static<S>;
}

/** The first schema violation as `<path> <message>`, for error messages that name the field. */
export function firstSchemaError<S extends TSchema>(schema: S, value: unknown): string | undefined {
  const validate = validatorFor(schema);
  if (validate(value)) return undefined;
  const err = compiled.get(schema)?.errors?.[0];
  return err ? `${err.instancePath || '/'} ${err.message ?? 'is invalid'}` : 'is invalid';
}

/** Every schema violation of `value` (none when it is valid). */
export function schemaErrors<S extends TSchema>(schema: S, value: unknown): ErrorObject[] {
  let fn = compiledAll.get(schema);
  if (!fn) {
    fn = ajvAll.compile(schema);
    compiledAll.set(schema, fn);
  }
  return fn(value) ? [] : [...(fn.errors ?? [])];
}
