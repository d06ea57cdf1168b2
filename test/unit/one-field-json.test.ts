import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { oneFieldJson, readOneFieldJson } from '../../src/common/one-field-json.js';

test('what oneFieldJson writes is read back as the value it holds', () => {
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true })), (value) => {
      assert.deepEqual(readOneFieldJson(oneFieldJson('field', value).toString('utf8'), 'field'), { ok: true, value: Object.is(value, -0) ? 0 : value });
    }),
  );
});

test('anything but an object holding the one field is refused, and says whether it was JSON', () => {
  for (const text of ['{"snapshot": ', '']) {
    const record = readOneFieldJson(text, 'snapshot');
    assert.ok(!record.ok && record.reason === 'not JSON' && record.cause instanceof SyntaxError, text);
  }
  for (const text of ['null', '[]', '["snapshot"]', '"snapshot"', '7', '{}', '{"other": 1}', '{"snapshot": 1, "other": 2}', '{"Snapshot": 1}']) {
    assert.deepEqual(readOneFieldJson(text, 'snapshot'), { ok: false, reason: 'not one field' }, text);
  }
  // The value is the caller's to check: any JSON value is handed back as it is.
  assert.deepEqual(readOneFieldJson('{"snapshot": null}', 'snapshot'), { ok: true, value: null });
  assert.deepEqual(readOneFieldJson(' {"snapshot": {"a": 1}}\n', 'snapshot'), { ok: true, value: { a: 1 } });
});

test('any JSON text but a one-field object of that name is refused', () => {
  fc.assert(
    fc.property(fc.json(), (text) => {
      const parsed: unknown = JSON.parse(text);
      const oneField = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) && Object.keys(parsed).length === 1 && 'f' in parsed;
      assert.equal(readOneFieldJson(text, 'f').ok, oneField);
    }),
  );
});
