import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { BatchRequestSchema, VPA_PATTERN } from '../../src/api/schemas.js';
import { parseBatchRequest } from '../../src/api/batch-request.js';
import { HttpError } from '../../src/api/http-error.js';
import { isValidVpa } from '../../src/vpa/vpa.js';

const schema = TypeCompiler.Compile(BatchRequestSchema);
const vpaLike = fc.oneof(
  fc.constantFrom('a@ybl', 'A.b_c-1@okaxis', '9876543210@paytm', 'x@y', 'no-at', '@ybl', 'a@1x', 'a@ybl@x', ''),
  fc.string({ maxLength: 12 }),
);
const item = fc.oneof({ weight: 8, arbitrary: vpaLike }, { weight: 1, arbitrary: fc.jsonValue() });
const items = fc.array(item, { maxLength: 105 });
const body = fc.oneof(
  items.map((upis) => ({ upis })),
  items.map((vpas) => ({ vpas })),
  fc.tuple(items, items).map(([upis, vpas]) => ({ upis, vpas })),
  fc.jsonValue(),
  fc.record({ upis: fc.jsonValue() }),
);

test('the batch validator accepts exactly what the published BatchRequest schema accepts (property)', () => {
  fc.assert(
    fc.property(body, (value) => {
      const ours = parseBatchRequest(value);
      assert.equal(!(ours instanceof HttpError), schema.Check(value), JSON.stringify(value).slice(0, 200));
    }),
    { numRuns: 5000 },
  );
});

test('the schema pattern and the VPA validator agree', () => {
  const pattern = new RegExp(VPA_PATTERN);
  fc.assert(fc.property(vpaLike, (s) => assert.equal(pattern.test(s), isValidVpa(s))), { numRuns: 3000 });
});

test('400 and 422 split as documented', () => {
  const code = (value: unknown) => {
    const r = parseBatchRequest(value);
    return r instanceof HttpError ? r.code : 'ok';
  };
  assert.equal(code({ upis: ['a@ybl'] }), 'ok');
  assert.equal(code({ vpas: ['a@ybl'] }), 'ok');
  assert.equal(code([]), 'validation_error');
  assert.equal(code(null), 'validation_error');
  assert.equal(code({ upis: 'a@ybl' }), 'validation_error');
  assert.equal(code({ upis: [1] }), 'validation_error');
  assert.equal(code({ upis: ['a@ybl'], vpas: ['a@ybl'] }), 'validation_error');
  assert.equal(code({}), 'bad_request');
  assert.equal(code({ upis: [] }), 'bad_request');
  assert.equal(code({ upis: Array(101).fill('a@ybl') }), 'bad_request');
  assert.equal(code({ upis: ['a@ybl', 'nope'] }), 'bad_request');
});
