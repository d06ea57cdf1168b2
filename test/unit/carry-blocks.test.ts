import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SnapshotBuilder } from '../../src/builder/snapshot-builder.js';
import { BLOCK_RECORDS, BlockIndex, blockMayHold, vpaProbe } from '../../src/builder/record-blocks.js';
import { RecordWriter } from '../../src/builder/record-codec.js';
import { evidence, ingest, tempDataDir, type EvidenceInput } from '../helpers.js';

/** `count` records, the i-th of VPA `upiOf(i)`, in one shared segment as a dedup task lays them out (ids dropped). */
function segmentOf(count: number, upiOf: (i: number) => string): SharedArrayBuffer {
  const writer = new RecordWriter(1024);
  for (let i = 0; i < count; i++) writer.append(i, 0, 1_700_000_000_000 + i, 0, upiOf(i), `https://u${i % 7}.example`, `e${i}`);
  const withIds = writer.finishShared();
  // Copied without ids, as carried records are.
  const carried = new RecordWriter(withIds.byteLength);
  const bytes = new Uint8Array(withIds);
  let at = 0;
  while (at < bytes.length) {
    const upiLength = bytes[at + 17]! | (bytes[at + 18]! << 8);
    const urlLength = bytes[at + 19]! | (bytes[at + 20]! << 8);
    const idLength = bytes[at + 21]! | (bytes[at + 22]! << 8);
    const idStart = at + 23 + upiLength + urlLength;
    carried.appendWithoutId(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), at, idStart);
    at = idStart + idLength;
  }
  return carried.finishShared();
}

test('blocks cover every record in order, and each block\'s filter holds the VPAs of its records', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 5 * BLOCK_RECORDS + 3 }), fc.integer({ min: 1, max: 400 }), (count, vpas) => {
      const upiOf = (i: number) => `payee${(i * 7919) % vpas}@ybl`;
      const segment = segmentOf(count, upiOf);
      const blocks = new BlockIndex().of(segment);
      assert.equal(blocks.records, count);
      assert.equal(blocks.blocks, Math.ceil(count / BLOCK_RECORDS));
      assert.equal(blocks.starts[blocks.blocks], segment.byteLength);
      for (let i = 0; i < count; i++) {
        const upi = Buffer.from(upiOf(i), 'latin1');
        const b = Math.floor(i / BLOCK_RECORDS);
        assert.ok(blockMayHold(blocks, b, Uint32Array.of(vpaProbe(upi, 0, upi.length))), `record ${i} in block ${b}`);
      }
    }),
    { numRuns: 25 },
  );
});

test('a warm-up a slice at a time makes the same blocks as making them at once', async () => {
  const segment = segmentOf(3 * BLOCK_RECORDS + 17, (i) => `w${i % 50}@ybl`);
  const other = segmentOf(70_000, (i) => `v${i % 5000}@ybl`);
  const warmed = new BlockIndex();
  warmed.warm([other, segment]);
  // Slices run between other work: give them their turns.
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
  const expected = new BlockIndex().of(segment);
  assert.ok(warmed.bytesOf([other, segment]) > 0);
  assert.deepEqual(warmed.of(segment), expected);
  assert.deepEqual(warmed.of(other), new BlockIndex().of(other));
});

test('records of a VPA and the VPA of an id are found through the blocks as by reading every record', async () => {
  const t = await tempDataDir();
  // Four id and four VPA partitions (a lone build thread's): each ingest read on its own adds a segment of
  // about 2,250 records, three blocks, to each pair.
  const builder = new SnapshotBuilder({ threads: 1, indexCarry: true });
  const items: EvidenceInput[] = [];
  let n = 0;
  try {
    for (let batch = 0; batch < 3; batch++) {
      const batchItems: EvidenceInput[] = [];
      for (let i = 0; i < 36_000; i++, n++) batchItems.push(evidence(`p${(n * 31) % 900}@ybl`, `https://s${n % 40}.example`, { evidence_id: `id-${n}` }));
      items.push(...batchItems);
      await ingest(t.dir, t.root, batchItems);
      await builder.absorb(t.dir);
    }
    assert.ok(builder.carriedBytes > 0);
    const asked = new Set(['p0@ybl', 'p17@ybl', 'p899@ybl', 'nobody@ybl']);
    const found = await builder.retractAndRead(t.dir, ['id-31'], asked, { withIds: true });
    for (const upi of asked) {
      const expected = items.filter((e) => e.upi === upi).map((e) => e.evidence_id).sort();
      const got = (found.get(upi) ?? []).map((item) => item.id!).sort();
      assert.deepEqual(got, expected, upi);
    }
    // id-31 names p961 % 900 = p61: retracted, it is marked so.
    const p61 = await builder.retractAndRead(t.dir, [], new Set(['p61@ybl']), { withIds: true });
    assert.deepEqual(
      p61.get('p61@ybl')!.filter((item) => item.retracted).map((item) => item.id),
      ['id-31'],
    );
    // Ids anywhere in the carried records, first and last of a batch included.
    const ids = ['id-0', 'id-1023', 'id-1024', 'id-2999', 'id-3000', 'id-35999', 'id-36000', 'id-107999', 'missing'];
    const located = await builder.locateEvidence(t.dir, ids);
    for (const id of ids) {
      const item = items.find((e) => e.evidence_id === id);
      assert.equal(located.get(id), item?.upi, id);
    }
  } finally {
    await builder.close();
    await t.cleanup();
  }
});
