import assert from 'node:assert/strict';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import type { TSchema } from '@sinclair/typebox';

const checkers = new Map<TSchema, ReturnType<typeof TypeCompiler.Compile>>();

/** Fail unless `value` matches `schema` (compiled once per schema), naming every mismatch. */
export function assertSchema(schema: TSchema, value: unknown): void {
  let checker = checkers.get(schema);
  if (checker === undefined) {
    checker = TypeCompiler.Compile(schema);
    checkers.set(schema, checker);
  }
  const errors = [...checker.Errors(value)].map((e) => `${e.path}: ${e.message}`);
  assert.deepEqual(errors, [], `schema ${String(schema.$id)}: ${JSON.stringify(value).slice(0, 300)}`);
}
