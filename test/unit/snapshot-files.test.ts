import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, readdir, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { dataDir, type DataDir } from '../../src/common/data-dir.js';
import { SnapshotError } from '../../src/common/errors.js';
import { ARRAY_FIELDS, type SnapshotData } from '../../src/engine/snapshot-data.js';
import {
  SNAPSHOTS_KEPT,
  listSnapshots,
  loadNewestValidSnapshot,
  newSnapshotId,
  readSnapshotFile,
  writeSnapshot,
} from '../../src/engine/snapshot-files.js';
import { loadSnapshotOffThread } from '../../src/engine/snapshot-loader.js';
import { fakeSnapshot, snapshotDifferences } from '../fixtures/fake-snapshot.js';

const T0 = Date.UTC(2026, 10, 22, 5, 17, 0, 123);
const MINUTE = 60_000;

let root: string;
let dir: DataDir;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'upi-risk-snapshot-files-'));
  dir = dataDir(root);
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

function snapshotAt(minutes: number, vpas = 300): SnapshotData {
  return fakeSnapshot(vpas, { seed: minutes + 1, createdAt: T0 + minutes * MINUTE });
}

function allShared(data: SnapshotData): boolean {
  return ARRAY_FIELDS.every((field) => data[field].buffer instanceof SharedArrayBuffer);
}

async function corrupt(path: string): Promise<void> {
  const bytes = await readFile(path);
  bytes[bytes.length - 5]! ^= 0xff;
  await writeFile(path, bytes);
}

describe('newSnapshotId', () => {
  it('is a compact UTC timestamp and a random suffix', () => {
    assert.match(newSnapshotId(T0), /^20261122T051700123Z-[0-9a-f]{6}$/);
  });

  it('sorts by time and is unique within a millisecond', () => {
    const times = [T0 - 1, T0, T0 + 1, T0 + 1000, Date.UTC(2027, 0, 1)];
    const ids = times.map((t) => newSnapshotId(t));
    assert.deepEqual([...ids].sort(), ids);
    const same = new Set(Array.from({ length: 1000 }, () => newSnapshotId(T0)));
    assert.equal(same.size, 1000);
  });

  it('refuses times it cannot format', () => {
    assert.throws(() => newSnapshotId(Number.NaN), RangeError);
    assert.throws(() => newSnapshotId(Date.UTC(12000, 0, 1)), RangeError);
  });
});

describe('writeSnapshot and listSnapshots', () => {
  it('writes snapshot-<id>.upisnap atomically, leaving no temporary file', async () => {
    const data = snapshotAt(0);
    const path = await writeSnapshot(dir, data);
    assert.equal(path, join(dir.snapshots, `snapshot-${data.meta.id}.upisnap`));
    assert.deepEqual(await readdir(dir.snapshots), [basename(path)]);
    assert.deepEqual(snapshotDifferences(await readSnapshotFile(path), data), []);
  });

  it('refuses an id that is not a snapshot id', async () => {
    const data = snapshotAt(0);
    const bad = { ...data, meta: { ...data.meta, id: '../escape' } };
    await assert.rejects(writeSnapshot(dir, bad), RangeError);
    assert.deepEqual(await listSnapshots(dir), []);
  });

  it('lists newest first, leaving out temporary and unrelated files', async () => {
    const written = [];
    for (const minutes of [5, 1, 9]) written.push(await writeSnapshot(dir, snapshotAt(minutes)));
    await writeFile(join(dir.snapshots, `.tmp-snapshot-${newSnapshotId(T0 + 99 * MINUTE)}.upisnap.1.abcd`), 'partial');
    await writeFile(join(dir.snapshots, 'notes.txt'), 'hello');
    await writeFile(join(dir.snapshots, 'snapshot-latest.upisnap'), 'not an id');
    await writeFile(join(dir.snapshots, `snapshot-${newSnapshotId(T0)}.upisnap.bak`), 'backup');
    await mkdir(join(dir.snapshots, 'old'));
    assert.deepEqual(await listSnapshots(dir), [written[2], written[0], written[1]]);
  });

  it('lists nothing when the snapshots directory does not exist', async () => {
    assert.deepEqual(await listSnapshots(dir), []);
  });

  it(`keeps only the newest ${SNAPSHOTS_KEPT} snapshots`, async () => {
    const written = [];
    for (let minutes = 0; minutes < 5; minutes++) written.push(await writeSnapshot(dir, snapshotAt(minutes)));
    assert.deepEqual(await listSnapshots(dir), written.slice(2).reverse());
    assert.equal((await readdir(dir.snapshots)).length, SNAPSHOTS_KEPT);
  });

  it('never prunes the snapshot just written, even when older ones sort after it', async () => {
    const newer = [];
    for (const minutes of [10, 11, 12]) newer.push(await writeSnapshot(dir, snapshotAt(minutes)));
    const older = await writeSnapshot(dir, snapshotAt(1));
    assert.deepEqual(await listSnapshots(dir), [...newer.reverse(), older]);
  });
});

describe('readSnapshotFile', () => {
  it('reads into shared memory on request', async () => {
    const data = snapshotAt(0);
    const path = await writeSnapshot(dir, data);
    const shared = await readSnapshotFile(path, { shared: true });
    assert.ok(allShared(shared));
    assert.deepEqual(snapshotDifferences(shared, data), []);
  });

  it('names the file in errors, and reports a missing one as not found', async () => {
    const path = await writeSnapshot(dir, snapshotAt(0));
    await truncate(path, 100);
    await assert.rejects(readSnapshotFile(path), (error: unknown) => {
      assert.ok(error instanceof SnapshotError);
      assert.equal(error.code, 'ERR_SNAPSHOT_TRUNCATED');
      assert.ok(error.message.startsWith(`${path}: `), error.message);
      return true;
    });
    await assert.rejects(readSnapshotFile(join(root, 'absent.upisnap')), { name: 'SnapshotError', code: 'ERR_SNAPSHOT_NOT_FOUND' });
  });
});

describe('loadNewestValidSnapshot', () => {
  it('loads the newest snapshot', async () => {
    await writeSnapshot(dir, snapshotAt(0));
    const newest = snapshotAt(1);
    const path = await writeSnapshot(dir, newest);
    const loaded = await loadNewestValidSnapshot(dir);
    assert.ok(loaded);
    assert.equal(loaded.path, path);
    assert.deepEqual(snapshotDifferences(loaded.data, newest), []);
  });

  it('skips a corrupt newest snapshot, reporting it, and loads the next', async () => {
    const older = snapshotAt(0);
    const olderPath = await writeSnapshot(dir, older);
    const newestPath = await writeSnapshot(dir, snapshotAt(1));
    await corrupt(newestPath);
    const skipped: [string, unknown][] = [];
    const loaded = await loadNewestValidSnapshot(dir, { shared: true, onSkip: (path, error) => skipped.push([path, error]) });
    assert.ok(loaded);
    assert.equal(loaded.path, olderPath);
    assert.deepEqual(snapshotDifferences(loaded.data, older), []);
    assert.ok(allShared(loaded.data));
    assert.equal(skipped.length, 1);
    assert.equal(skipped[0]![0], newestPath);
    assert.ok(skipped[0]![1] instanceof SnapshotError);
    assert.equal(skipped[0]![1].code, 'ERR_SNAPSHOT_CHECKSUM');
  });

  it('returns null when no snapshot is valid, or there is none', async () => {
    assert.equal(await loadNewestValidSnapshot(dir), null);
    await mkdir(dir.snapshots, { recursive: true });
    assert.equal(await loadNewestValidSnapshot(dir), null);
    await corrupt(await writeSnapshot(dir, snapshotAt(0)));
    let skips = 0;
    assert.equal(await loadNewestValidSnapshot(dir, { onSkip: () => skips++ }), null);
    assert.equal(skips, 1);
  });

  it('loads through a given reader, such as the off-thread loader', async () => {
    const data = snapshotAt(0);
    await writeSnapshot(dir, data);
    const loaded = await loadNewestValidSnapshot(dir, { read: loadSnapshotOffThread });
    assert.ok(loaded);
    assert.ok(allShared(loaded.data));
    assert.deepEqual(snapshotDifferences(loaded.data, data), []);
  });
});

describe('loadSnapshotOffThread', () => {
  it('returns the same data, in SharedArrayBuffers', async () => {
    const data = snapshotAt(0, 20_000);
    const path = await writeSnapshot(dir, data);
    const loaded = await loadSnapshotOffThread(path);
    assert.ok(allShared(loaded));
    // All arrays are views of one shared buffer: the file as read.
    assert.equal(new Set(ARRAY_FIELDS.map((field) => loaded[field].buffer)).size, 1);
    assert.deepEqual(snapshotDifferences(loaded, data), []);
    for (const field of ARRAY_FIELDS) assert.equal(loaded[field].constructor, data[field].constructor);
  });

  it('rejects a corrupt file with the same code and message as loading here', async () => {
    const path = await writeSnapshot(dir, snapshotAt(0));
    await corrupt(path);
    const here = await readSnapshotFile(path).then(
      () => assert.fail('expected a checksum error'),
      (error: unknown) => error as SnapshotError,
    );
    await assert.rejects(loadSnapshotOffThread(path), (error: unknown) => {
      assert.ok(error instanceof SnapshotError);
      assert.equal(error.code, 'ERR_SNAPSHOT_CHECKSUM');
      assert.equal(error.message, here.message);
      return true;
    });
  });

  it('rejects a missing file as not found', async () => {
    await assert.rejects(loadSnapshotOffThread(join(root, 'absent.upisnap')), (error: unknown) => {
      assert.ok(error instanceof SnapshotError);
      assert.equal(error.code, 'ERR_SNAPSHOT_NOT_FOUND');
      return true;
    });
  });
});
