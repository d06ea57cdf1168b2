import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ARRAY_FIELDS } from '../../src/engine/snapshot-data.js';
import { decodeSnapshot } from '../../src/engine/snapshot-format/decode.js';
import { encodeSnapshot } from '../../src/engine/snapshot-format/encode.js';
import { toSharedMemory } from '../../src/engine/snapshot-format/shared-memory.js';
import { buildInProcess, evidence } from '../helpers.js';

// A build assembles every array of its snapshot in shared memory, so the
// snapshot goes to the serving threads as it is: at 10M VPAs a copy would be
// 1.5 GiB more of fresh memory in the middle of every rebuild.

const ITEMS = [
  evidence('gang.one@ybl', 'https://t.me/gangchannel'),
  evidence('gang.two@okaxis', 'https://t.me/gangchannel'),
  evidence('a.name.long.enough.to.need.a.tail.record@okhdfcbank', 'https://phish.example/kyc', { source_category: 'phishing' }),
];

test('an assembled snapshot is in shared memory already, and is handed on without a copy', () => {
  const data = buildInProcess(ITEMS).data;
  for (const field of ARRAY_FIELDS) assert.ok(data[field].buffer instanceof SharedArrayBuffer, `${field} is in shared memory`);
  assert.equal(toSharedMemory(data), data);
});

test('a snapshot in private memory is copied into shared memory, array for array', () => {
  const assembled = buildInProcess(ITEMS).data;
  const bytes = Buffer.concat(encodeSnapshot(assembled));
  const decoded = decodeSnapshot(new Uint8Array(bytes));
  assert.ok(ARRAY_FIELDS.some((field) => !(decoded[field].buffer instanceof SharedArrayBuffer)), 'decoded from a private buffer');
  const shared = toSharedMemory(decoded);
  assert.notEqual(shared, decoded);
  for (const field of ARRAY_FIELDS) {
    assert.ok(shared[field].buffer instanceof SharedArrayBuffer, `${field} is in shared memory`);
    assert.deepEqual(Buffer.from(shared[field].buffer, shared[field].byteOffset, shared[field].byteLength), Buffer.from(assembled[field].buffer, assembled[field].byteOffset, assembled[field].byteLength), field);
  }
});
