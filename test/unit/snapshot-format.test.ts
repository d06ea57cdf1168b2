import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Packr, Unpackr } from 'msgpackr';
import roaring from 'roaring';
import { SnapshotError, type SnapshotErrorCode } from '../../src/common/errors.js';
import { SNAPSHOT_FORMAT_VERSION, SNAPSHOT_HEADER_LENGTH } from '../../src/engine/snapshot-format/format.js';
import { decodeSnapshot } from '../../src/engine/snapshot-format/decode.js';
import { encodeSnapshot, frameSnapshotBody } from '../../src/engine/snapshot-format/encode.js';
import { ARRAY_FIELDS, NO_CLUSTER, type SnapshotData } from '../../src/engine/snapshot-data.js';
import { fakeSnapshot, snapshotDifferences } from '../fixtures/fake-snapshot.js';

const { RoaringBitmap32 } = roaring;

const VPAS = 5000;
const data = fakeSnapshot(VPAS, { seed: 7 });
const file = Buffer.concat(encodeSnapshot(data));

function expectError(fn: () => unknown, code: SnapshotErrorCode, message?: RegExp): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof SnapshotError, `expected a SnapshotError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    if (message) assert.match(error.message, message);
    return true;
  });
}

/** The body as any msgpack decoder sees it. */
type GenericBody = {
  meta: Record<string, unknown>;
  arrays: Record<string, { type: unknown; pad?: unknown; data: unknown }>;
};

const genericUnpackr = new Unpackr({ useRecords: false });
const genericPackr = new Packr({ useRecords: false });

/** Decode the body generically, let `edit` change it, re-encode it with msgpackr and frame it with a correct CRC. */
function tampered(edit: (body: GenericBody) => void): Buffer {
  const body = genericUnpackr.unpack(file.subarray(SNAPSHOT_HEADER_LENGTH)) as GenericBody;
  edit(body);
  return Buffer.concat(frameSnapshotBody(Buffer.from(genericPackr.pack(body))));
}

function arrayData(body: GenericBody, field: string): Buffer {
  return Buffer.from(body.arrays[field]!.data as Uint8Array); // a copy that can be edited
}

function allShared(snapshot: SnapshotData): boolean {
  return ARRAY_FIELDS.every((field) => snapshot[field].buffer instanceof SharedArrayBuffer);
}

describe('snapshot codec: round trip', () => {
  it('decodes exactly what was encoded, every array and meta field', () => {
    const decoded = decodeSnapshot(file);
    assert.deepEqual(snapshotDifferences(decoded, data), []);
    assert.deepStrictEqual(decoded.meta, data.meta);
    for (const field of ARRAY_FIELDS) assert.equal(decoded[field].constructor, data[field].constructor, field);
  });

  it('writes the header fields as documented', () => {
    assert.equal(file.subarray(0, 8).toString('latin1'), 'UPIRSNAP');
    assert.equal(file.readUInt32LE(8), SNAPSHOT_FORMAT_VERSION);
    assert.equal(file.readUInt32LE(12), 0);
    assert.equal(Number(file.readBigUInt64LE(16)), file.length - SNAPSHOT_HEADER_LENGTH);
    assert.equal(file.readUInt32LE(28), 0);
  });

  it('takes views of the file bytes instead of copying when they are aligned', () => {
    const decoded = decodeSnapshot(file);
    for (const field of ARRAY_FIELDS) assert.equal(decoded[field].buffer, file.buffer, field);
  });

  it('round-trips an empty snapshot', () => {
    const empty = fakeSnapshot(0);
    const decoded = decodeSnapshot(Buffer.concat(encodeSnapshot(empty)));
    assert.deepEqual(snapshotDifferences(decoded, empty), []);
  });

  it('encodes a decoded snapshot to the same bytes', () => {
    const again = Buffer.concat(encodeSnapshot(decodeSnapshot(file, { shared: true })));
    assert.ok(again.equals(file));
  });

  it('puts every array in a SharedArrayBuffer with shared: true', () => {
    const decoded = decodeSnapshot(file, { shared: true });
    assert.ok(allShared(decoded));
    assert.deepEqual(snapshotDifferences(decoded, data), []);
  });

  it('shares the source memory when the bytes already live in a SharedArrayBuffer', () => {
    const sab = new SharedArrayBuffer(file.length);
    const bytes = new Uint8Array(sab);
    bytes.set(file);
    const decoded = decodeSnapshot(bytes, { shared: true });
    for (const field of ARRAY_FIELDS) assert.equal(decoded[field].buffer, sab, field);
    assert.deepEqual(snapshotDifferences(decoded, data), []);
  });

  it('has a body any msgpack decoder reads', () => {
    const body = genericUnpackr.unpack(file.subarray(SNAPSHOT_HEADER_LENGTH)) as GenericBody;
    assert.deepStrictEqual(body.meta, { ...data.meta });
    assert.deepEqual(Object.keys(body.arrays), [...ARRAY_FIELDS]);
    assert.equal(body.arrays.confidence!.type, 'Uint16Array');
    const entries = body.arrays.slotEntries!.data as Uint8Array;
    assert.ok(Buffer.from(entries).equals(Buffer.from(data.slotEntries.buffer, data.slotEntries.byteOffset, data.slotEntries.byteLength)));
  });

  it('decodes a body re-encoded by another msgpack writer (unaligned arrays are copied)', () => {
    const bytes = tampered(() => {});
    assert.notEqual(bytes.length, file.length); // no padding to alignment any more
    assert.deepEqual(snapshotDifferences(decodeSnapshot(bytes), data), []);
    assert.ok(allShared(decodeSnapshot(bytes, { shared: true })));
  });

  it('decodes input held at an odd offset', () => {
    const holder = Buffer.alloc(file.length + 3);
    file.copy(holder, 3);
    assert.deepEqual(snapshotDifferences(decodeSnapshot(holder.subarray(3)), data), []);
  });
});

describe('snapshot codec: damaged files', () => {
  it('reports truncation at any cut point', () => {
    for (const cut of [0, 1, 7, 8, 20, 31, 32, 33, 100, file.length >> 1, file.length - 1]) {
      expectError(() => decodeSnapshot(file.subarray(0, cut)), 'ERR_SNAPSHOT_TRUNCATED');
    }
    expectError(() => decodeSnapshot(file.subarray(0, 10)), 'ERR_SNAPSHOT_TRUNCATED', /shorter than the 32-byte header/);
    expectError(() => decodeSnapshot(file.subarray(0, 1000)), 'ERR_SNAPSHOT_TRUNCATED', /announces a \d+-byte body, 968 bytes follow/);
  });

  it('reports a flipped byte anywhere in the body as a checksum mismatch', () => {
    for (const at of [SNAPSHOT_HEADER_LENGTH, 100, file.length >> 1, file.length - 1]) {
      const bytes = Buffer.from(file);
      bytes[at]! ^= 0x10;
      expectError(() => decodeSnapshot(bytes), 'ERR_SNAPSHOT_CHECKSUM', /checksum mismatch/);
    }
    const header = Buffer.from(file);
    header[24]! ^= 1;
    expectError(() => decodeSnapshot(header), 'ERR_SNAPSHOT_CHECKSUM');
  });

  it('refuses a file that is not a snapshot', () => {
    const bytes = Buffer.from(file);
    bytes.write('NOTSNAP!', 0, 'latin1');
    expectError(() => decodeSnapshot(bytes), 'ERR_SNAPSHOT_FORMAT', /not a upi-risk snapshot/);
    expectError(() => decodeSnapshot(Buffer.from('{"vpa":"a@b"}\n')), 'ERR_SNAPSHOT_FORMAT', /not a upi-risk snapshot/);
    expectError(() => decodeSnapshot(Buffer.from('UPx')), 'ERR_SNAPSHOT_FORMAT', /not a upi-risk snapshot/);
  });

  it('refuses another format version, naming both versions', () => {
    assert.equal(SNAPSHOT_FORMAT_VERSION, 4);
    // Version 3, the format before the columns kept for merging new evidence: an upgraded server refuses its old files.
    const bytes = Buffer.from(file);
    bytes.writeUInt32LE(3, 8);
    expectError(() => decodeSnapshot(bytes), 'ERR_SNAPSHOT_VERSION', /version 3 .*reads version 4/);
    bytes.writeUInt32LE(2, 8);
    expectError(() => decodeSnapshot(bytes), 'ERR_SNAPSHOT_VERSION', /version 2 .*reads version 4/);
    const framed = Buffer.concat(frameSnapshotBody(file.subarray(SNAPSHOT_HEADER_LENGTH), 1));
    expectError(() => decodeSnapshot(framed), 'ERR_SNAPSHOT_VERSION');
  });

  it('refuses unknown flags and bytes after the body', () => {
    const flagged = Buffer.from(file);
    flagged.writeUInt32LE(1, 12);
    expectError(() => decodeSnapshot(flagged), 'ERR_SNAPSHOT_FORMAT', /flags/);
    expectError(() => decodeSnapshot(Buffer.concat([file, Buffer.from([0])])), 'ERR_SNAPSHOT_FORMAT', /1 unexpected bytes after/);
  });
});

describe('snapshot codec: bodies with a valid checksum but wrong content', () => {
  it('refuses a body that is not msgpack or not a map', () => {
    expectError(() => decodeSnapshot(Buffer.concat(frameSnapshotBody(Buffer.from([0xc1, 1, 2])))), 'ERR_SNAPSHOT_FORMAT');
    expectError(() => decodeSnapshot(Buffer.concat(frameSnapshotBody(genericPackr.pack([1, 2])))), 'ERR_SNAPSHOT_FORMAT', /not a map/);
    expectError(() => decodeSnapshot(Buffer.concat(frameSnapshotBody(Buffer.alloc(0)))), 'ERR_SNAPSHOT_FORMAT');
    // A map cut short inside the body.
    const cut = file.subarray(SNAPSHOT_HEADER_LENGTH, file.length - 10);
    expectError(() => decodeSnapshot(Buffer.concat(frameSnapshotBody(cut))), 'ERR_SNAPSHOT_FORMAT', /ends inside a value/);
  });

  it('refuses a missing meta, arrays entry or array', () => {
    expectError(() => decodeSnapshot(tampered((b) => delete (b as Partial<GenericBody>).meta)), 'ERR_SNAPSHOT_FORMAT', /no "meta"/);
    expectError(() => decodeSnapshot(tampered((b) => delete (b as Partial<GenericBody>).arrays)), 'ERR_SNAPSHOT_FORMAT', /no "arrays"/);
    expectError(() => decodeSnapshot(tampered((b) => delete b.arrays.vpaCluster)), 'ERR_SNAPSHOT_FORMAT', /arrays\.vpaCluster is missing/);
    expectError(() => decodeSnapshot(tampered((b) => delete b.arrays.slotEntries!.type)), 'ERR_SNAPSHOT_FORMAT', /arrays\.slotEntries has no "type"/);
  });

  it('refuses missing or mistyped meta fields', () => {
    expectError(() => decodeSnapshot(tampered((b) => delete b.meta.id)), 'ERR_SNAPSHOT_FORMAT', /meta\.id/);
    // The id becomes a header line: a line break in it would let a snapshot file write headers.
    expectError(() => decodeSnapshot(tampered((b) => (b.meta.id = 'v1\r\nSet-Cookie: a=b'))), 'ERR_SNAPSHOT_FORMAT', /meta\.id is not 1 to 64 visible ASCII/);
    expectError(() => decodeSnapshot(tampered((b) => (b.meta.id = 'x'.repeat(65)))), 'ERR_SNAPSHOT_FORMAT', /meta\.id/);
    expectError(() => decodeSnapshot(tampered((b) => (b.meta.createdAt = 'yesterday'))), 'ERR_SNAPSHOT_FORMAT', /meta\.createdAt/);
    // Finite, but past Date's range: no answer could write it, so the snapshot would load and fail every answer.
    expectError(() => decodeSnapshot(tampered((b) => (b.meta.dataAsOf = 8.64e15 + 1))), 'ERR_SNAPSHOT_FORMAT', /meta\.dataAsOf is not a time in Date's range/);
    expectError(() => decodeSnapshot(tampered((b) => (b.meta.scoredAt = -1e300))), 'ERR_SNAPSHOT_FORMAT', /meta\.scoredAt/);
    expectError(() => decodeSnapshot(tampered((b) => (b.meta.vpaCount = -1))), 'ERR_SNAPSHOT_FORMAT', /meta\.vpaCount/);
    expectError(() => decodeSnapshot(tampered((b) => (b.meta.evidenceFiles = [1]))), 'ERR_SNAPSHOT_FORMAT', /evidenceFiles/);
    expectError(() => decodeSnapshot(tampered((b) => (b.meta = [] as never))), 'ERR_SNAPSHOT_FORMAT', /meta is not a map/);
  });

  it('refuses an array of the wrong class', () => {
    expectError(
      () => decodeSnapshot(tampered((b) => (b.arrays.confidence!.type = 'Uint32Array'))),
      'ERR_SNAPSHOT_FORMAT',
      /arrays\.confidence has type Uint32Array, expected Uint16Array/,
    );
    expectError(() => decodeSnapshot(tampered((b) => (b.arrays.slotEntries!.data = 'text'))), 'ERR_SNAPSHOT_FORMAT', /slotEntries\.data is not binary/);
    expectError(
      () => decodeSnapshot(tampered((b) => (b.arrays.firstSeen!.data = arrayData(b, 'firstSeen').subarray(3)))),
      'ERR_SNAPSHOT_FORMAT',
      /not a whole number of Float64Array elements/,
    );
  });

  it('refuses lengths that disagree with the meta counts', () => {
    const shorter = (field: string, bytes: number) => (b: GenericBody) => {
      const d = arrayData(b, field);
      b.arrays[field]!.data = d.subarray(0, d.length - bytes);
    };
    expectError(() => decodeSnapshot(tampered(shorter('firstSeen', 8))), 'ERR_SNAPSHOT_FORMAT', /firstSeen has 4999 entries, expected 5000/);
    expectError(() => decodeSnapshot(tampered(shorter('vpaSlots', 4))), 'ERR_SNAPSHOT_FORMAT', /vpaSlots has 4999 entries, expected 5000/);
    expectError(() => decodeSnapshot(tampered(shorter('sourceFlags', 1))), 'ERR_SNAPSHOT_FORMAT', /sourceFlags .*meta\.sourceCount/);
    expectError(() => decodeSnapshot(tampered(shorter('clusterNumber', 4))), 'ERR_SNAPSHOT_FORMAT', /clusterNumber .*meta\.clusterCount/);
    expectError(() => decodeSnapshot(tampered(shorter('urlMembersOffsets', 4))), 'ERR_SNAPSHOT_FORMAT', /urlMembersOffsets/);
    expectError(() => decodeSnapshot(tampered(shorter('slotEntries', 8))), 'ERR_SNAPSHOT_FORMAT', /slotEntries has \d+ entries, expected \d+ \(8 words for each of the \d+ slots\)/);
    expectError(() => decodeSnapshot(tampered(shorter('slotTags', 2))), 'ERR_SNAPSHOT_FORMAT', /slotEntries has \d+ entries, expected/);
    expectError(() => decodeSnapshot(tampered((b) => (b.meta.vpaCount = VPAS + 1))), 'ERR_SNAPSHOT_FORMAT', /expected 5001 \(meta\.vpaCount\)/);
  });

  it('refuses offsets that do not end at their blob, or go backwards', () => {
    const editUint32 = (field: string, index: number, value: number) => (b: GenericBody) => {
      const d = arrayData(b, field);
      d.writeUInt32LE(value, index * 4);
      b.arrays[field]!.data = d;
    };
    expectError(() => decodeSnapshot(tampered(editUint32('urlOffsets', 2, 0))), 'ERR_SNAPSHOT_FORMAT', /urlOffsets decreases at 2/);
    expectError(() => decodeSnapshot(tampered(editUint32('sourceOffsets', 0, 1))), 'ERR_SNAPSHOT_FORMAT', /sourceOffsets\[0\]/);
  });

  it('refuses a VPA without sources: a flagged answer names at least one', () => {
    const sourceless = (b: GenericBody) => {
      const d = arrayData(b, 'sourceOffsets');
      d.writeUInt32LE(d.readUInt32LE(3 * 4), 4 * 4);
      b.arrays.sourceOffsets!.data = d;
    };
    // Only VPA 3 changes; VPA 4 takes its first source, so the offsets still ascend and end at the source count.
    expectError(() => decodeSnapshot(tampered(sourceless)), 'ERR_SNAPSHOT_FORMAT', /VPA 3 has no sources/);
  });

  it('refuses timestamps that no answer could name: not a number, not whole ms, or past the dates Date can hold', () => {
    const setFloat = (field: string, index: number, value: number) => (b: GenericBody) => {
      const d = arrayData(b, field);
      d.writeDoubleLE(value, index * 8);
      b.arrays[field]!.data = d;
    };
    expectError(() => decodeSnapshot(tampered(setFloat('firstSeen', 2, Number.NaN))), 'ERR_SNAPSHOT_FORMAT', /firstSeen\[2\] is NaN/);
    expectError(() => decodeSnapshot(tampered(setFloat('sourceCapturedAt', 5, 1.5))), 'ERR_SNAPSHOT_FORMAT', /sourceCapturedAt\[5\] is 1\.5/);
    expectError(() => decodeSnapshot(tampered(setFloat('clusterCreatedAt', 0, 8.64e15 + 1))), 'ERR_SNAPSHOT_FORMAT', /clusterCreatedAt\[0\]/);
    expectError(() => decodeSnapshot(tampered(setFloat('clusterLastUpdated', 1, -Infinity))), 'ERR_SNAPSHOT_FORMAT', /clusterLastUpdated\[1\]/);
    // Before 1970 and at Date's very ends are dates all the same.
    for (const edge of [-1, -8.64e15, 8.64e15]) assert.ok(decodeSnapshot(tampered(setFloat('firstSeen', 2, edge))));
  });

  it('refuses ids and codes out of range', () => {
    const setUint = (field: string, index: number, value: number, width: 1 | 2 | 4) => (b: GenericBody) => {
      const d = arrayData(b, field);
      d.writeUIntLE(value, index * width, width);
      b.arrays[field]!.data = d;
    };
    expectError(() => decodeSnapshot(tampered(setUint('sourceUrl', 3, data.meta.urlCount, 4))), 'ERR_SNAPSHOT_FORMAT', /sourceUrl\[3\]/);
    expectError(() => decodeSnapshot(tampered(setUint('vpaCluster', 1, data.meta.clusterCount, 4))), 'ERR_SNAPSHOT_FORMAT', /vpaCluster\[1\]/);
    expectError(() => decodeSnapshot(tampered(setUint('riskCategory', 0, 200, 1))), 'ERR_SNAPSHOT_FORMAT', /riskCategory\[0\]/);
    // A cluster's members: no bitmap at all, or one naming an id past the last VPA (its last two bytes, the highest id's low half).
    expectError(() => decodeSnapshot(tampered(setUint('clusterMembersOffsets', 1, 0, 4))), 'ERR_SNAPSHOT_FORMAT', /members of cluster 0 are no bitmap of VPA ids/);
    const highest = (b: GenericBody) => {
      const d = arrayData(b, 'clusterMembersBlob');
      d.writeUInt16LE(0xffff, data.clusterMembersOffsets[1]! - 2);
      b.arrays.clusterMembersBlob!.data = d;
    };
    expectError(() => decodeSnapshot(tampered(highest)), 'ERR_SNAPSHOT_FORMAT', /members of cluster 0 .*not below/);
    // A zero tag is an empty slot.
    const emptySlot = data.slotTags.indexOf(0);
    expectError(() => decodeSnapshot(tampered(setUint('slotTags', emptySlot, 1, 2))), 'ERR_SNAPSHOT_FORMAT', /slot \d+ is occupied but names no VPA/);
    expectError(
      () => decodeSnapshot(tampered(setUint('vpaSlots', 3, data.vpaSlots[4]!, 4))),
      'ERR_SNAPSHOT_FORMAT',
      /VPA [34] is in slot \d+, but vpaSlots says \d+/,
    );
    // Every ninth fake key is long enough for a tail record; point one past keyTails.
    const longSlot = data.vpaSlots[4]!;
    expectError(
      () => decodeSnapshot(tampered(setUint('slotEntries', longSlot * 8 + 7, data.keyTails.length, 4))),
      'ERR_SNAPSHOT_FORMAT',
      /VPA 4\): its tail record at \d+ lies past keyTails/,
    );
  });
});

describe('snapshot codec: the columns kept for merging new evidence, and the url table', () => {
  const setUint = (field: string, index: number, value: number, width: 1 | 2 | 4) => (b: GenericBody) => {
    const d = arrayData(b, field);
    d.writeUIntLE(value, index * width, width);
    b.arrays[field]!.data = d;
  };
  const setFloat = (field: string, index: number, value: number) => (b: GenericBody) => {
    const d = arrayData(b, field);
    d.writeDoubleLE(value, index * 8);
    b.arrays[field]!.data = d;
  };
  const shorter = (field: string, bytes: number) => (b: GenericBody) => {
    const d = arrayData(b, field);
    b.arrays[field]!.data = d.subarray(0, d.length - bytes);
  };
  const refused = (edit: (b: GenericBody) => void, message: RegExp) => expectError(() => decodeSnapshot(tampered(edit)), 'ERR_SNAPSHOT_FORMAT', message);
  const mixed = data.mixedRiskVpas;
  const urlCapacity = data.urlSlots.length;

  it('the fixture has them: mixed risk VPAs, and a url table with room to spare', () => {
    assert.ok(mixed.length > 10);
    assert.ok(urlCapacity >= 2 * data.meta.urlCount && (urlCapacity & (urlCapacity - 1)) === 0);
  });

  it('refuses per-VPA columns of the wrong length', () => {
    refused(shorter('evidenceWeight', 8), /evidenceWeight has 4999 entries, expected 5000 \(meta\.vpaCount\)/);
    refused(shorter('sourceCategoryMask', 1), /sourceCategoryMask has 4999 entries, expected 5000/);
    refused(shorter('mixedRiskCounts', 4), /mixedRiskCounts has \d+ entries, expected \d+ \(5 for each of the \d+ mixedRiskVpas\)/);
    refused(shorter('mixedRiskVpas', 4), /mixedRiskCounts has \d+ entries, expected/);
  });

  it('refuses an evidence weight that is not a whole number of units its evidence items can weigh', () => {
    const id = 7;
    const items = data.evidenceCount[id]!;
    for (const value of [Number.NaN, Infinity, -(2 ** 30), 0, 2 ** 31 + 0.5, items * 2 ** 30 - 2 ** 20, items * 2 ** 32 + 2 ** 20]) {
      refused(setFloat('evidenceWeight', id, value), new RegExp(`evidenceWeight\\[${id}\\] is .*not a whole number of units for ${items} evidence items`));
    }
    // At the bounds, a quarter or all of 2^32 per item, the weight is fine.
    for (const value of [items * 2 ** 30, items * 2 ** 32]) assert.ok(decodeSnapshot(tampered(setFloat('evidenceWeight', id, value))));
  });

  it('refuses an empty set of source categories, or a bit past the last', () => {
    refused(setUint('sourceCategoryMask', 3, 0, 1), /sourceCategoryMask\[3\] is 0/);
    refused(setUint('sourceCategoryMask', 3, 16, 1), /sourceCategoryMask\[3\] is 16/);
  });

  it('refuses mixed risk VPAs out of order or out of range', () => {
    refused(setUint('mixedRiskVpas', 2, mixed[1]!, 4), /mixedRiskVpas is not strictly ascending at 2/);
    refused(setUint('mixedRiskVpas', mixed.length - 1, VPAS, 4), /mixedRiskVpas\[\d+\] is 5000, not below meta\.vpaCount/);
  });

  it('refuses risk counts that do not add up to the evidence count, name one category, or make another risk category', () => {
    const id = mixed[0]!;
    const counts = data.mixedRiskCounts.subarray(0, 5);
    const nonZero = [...counts.keys()].filter((c) => counts[c]! > 0);
    refused(setUint('mixedRiskCounts', nonZero[0]!, counts[nonZero[0]!]! + 1, 4), new RegExp(`mixedRiskCounts of VPA ${id} add up to ${data.evidenceCount[id]! + 1}`));
    // All of its evidence moved to one category: the sum holds, but it is not mixed.
    const single = (b: GenericBody) => {
      const d = arrayData(b, 'mixedRiskCounts');
      for (let c = 0; c < 5; c++) d.writeUInt32LE(c === nonZero[0] ? data.evidenceCount[id]! : 0, c * 4);
      b.arrays.mixedRiskCounts!.data = d;
    };
    refused(single, new RegExp(`mixedRiskCounts of VPA ${id} name fewer than two risk categories`));
    const other = nonZero.find((c) => c !== data.riskCategory[id])!;
    refused(setUint('riskCategory', id, other, 1), new RegExp(`mixedRiskCounts of VPA ${id} make ${data.riskCategory[id]} its risk category, but riskCategory is ${other}`));
  });

  it('refuses a url table of the wrong size', () => {
    refused(shorter('urlSlots', 4), /urlSlots has \d+ slots, expected a power of two of at least 16 and twice meta\.urlCount/);
    refused(shorter('urlSlots', (urlCapacity / 2) * 4), /urlSlots has \d+ slots/);
  });

  it('refuses a url table that names no url, loses a url, or hides one from its lookup', () => {
    const occupied = data.urlSlots.findIndex((entry) => entry !== 0);
    const empty = data.urlSlots.findIndex((entry, slot) => entry === 0 && slot > 0 && data.urlSlots[slot - 1] === 0);
    refused(setUint('urlSlots', empty, data.meta.urlCount + 1, 4), new RegExp(`urlSlots\\[${empty}\\] names url ${data.meta.urlCount}, but there are ${data.meta.urlCount}`));
    refused(setUint('urlSlots', occupied, 0, 4), new RegExp(`urlSlots holds ${data.meta.urlCount - 1} urls, expected ${data.meta.urlCount}`));
    // One url in two slots, another in none.
    const twice = data.urlSlots[occupied]!;
    refused(setUint('urlSlots', data.urlSlots.indexOf(twice === 1 ? 2 : 1), twice, 4), /urlSlots does not lead to url \d+/);
    // A url moved out of its probe run: every url is still in one slot, but a lookup cannot reach it.
    const moved = (b: GenericBody) => {
      const d = arrayData(b, 'urlSlots');
      d.writeUInt32LE(0, occupied * 4);
      d.writeUInt32LE(data.urlSlots[occupied]!, empty * 4);
      b.arrays.urlSlots!.data = d;
    };
    refused(moved, /urlSlots does not lead to url \d+/);
  });
});

describe('snapshot codec: encoding checks its input', () => {
  it('refuses arrays of the wrong class or inconsistent lengths', () => {
    const wrongClass = { ...data, confidence: new Uint32Array(VPAS) } as unknown as SnapshotData;
    expectError(() => encodeSnapshot(wrongClass), 'ERR_SNAPSHOT_FORMAT', /cannot encode snapshot: confidence is Uint32Array, expected Uint16Array/);
    const short = { ...data, firstSeen: data.firstSeen.subarray(1) };
    expectError(() => encodeSnapshot(short), 'ERR_SNAPSHOT_FORMAT', /cannot encode snapshot: firstSeen has 4999 entries/);
    const badMeta = { ...data, meta: { ...data.meta, id: '' } };
    expectError(() => encodeSnapshot(badMeta), 'ERR_SNAPSHOT_FORMAT', /meta\.id/);
  });

  it('writes only the meta fields the format defines', () => {
    const extra = { ...data, meta: { ...data.meta, note: 'not part of the format' } };
    assert.deepStrictEqual(decodeSnapshot(Buffer.concat(encodeSnapshot(extra))).meta, data.meta);
  });
});

describe('fake snapshot fixture', () => {
  it('holds portable roaring bitmaps that match its clusters and sources', () => {
    const big = fakeSnapshot(200_000, { seed: 3 }); // ids span several 2^16 chunks
    const bitmap = (blob: Uint8Array, offsets: Uint32Array, i: number) =>
      RoaringBitmap32.deserialize(Buffer.from(blob.subarray(offsets[i]!, offsets[i + 1]!)), 'portable').toArray();

    const clusterMembers = new Map<number, number[]>();
    big.vpaCluster.forEach((c, id) => {
      if (c !== NO_CLUSTER) clusterMembers.set(c, [...(clusterMembers.get(c) ?? []), id]);
    });
    assert.equal(clusterMembers.size, big.meta.clusterCount);
    for (const [c, ids] of clusterMembers) assert.deepEqual(bitmap(big.clusterMembersBlob, big.clusterMembersOffsets, c), ids);

    const urlMembers = new Map<number, number[]>();
    for (let id = 0; id < big.meta.vpaCount; id++) {
      for (let s = big.sourceOffsets[id]!; s < big.sourceOffsets[id + 1]!; s++) {
        const url = big.sourceUrl[s]!;
        const list = urlMembers.get(url) ?? [];
        list.push(id);
        urlMembers.set(url, list);
      }
    }
    for (let url = 0; url < big.meta.urlCount; url += 97) {
      assert.deepEqual(bitmap(big.urlMembersBlob, big.urlMembersOffsets, url), urlMembers.get(url) ?? []);
    }
  });
});
