import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { withTestSchema, testClient } from '../store-fixtures.js';
import { tempDataDir, until } from '../helpers.js';
import { migrate } from '../../src/store/migrations.js';
import { newestMirrorVersion, recordMirrorVersion } from '../../src/store/mirror-versions.js';
import { storePool } from '../../src/store/postgres.js';
import { StoreMirror } from '../../src/fleet/store-mirror.js';
import { createMirrorKey, signText, type MirrorKey } from '../../src/mirror/signing-key.js';
import { MIRROR_HEADER_BYTES, MIRROR_KIND_DIFF, MIRROR_KIND_FULL, encodeMirrorFile, manifestSigningText, type MirrorEntries } from '../../src/mirror/mirror-format.js';
import { diffPath, fileBodies, fullPath, type MirrorFileBodies, type MirrorPublication } from '../../src/mirror/mirror-publication.js';
import { silentLogger } from '../../src/common/logger.js';

/** An entry set of the prefixes (hi, 0) given, each with entry byte `meta`. */
function entries(his: readonly number[], meta = 0x10): MirrorEntries {
  const sorted = [...his].sort((x, y) => x - y);
  return { count: sorted.length, hi: Uint32Array.from(sorted), lo: new Uint32Array(sorted.length), meta: new Uint8Array(sorted.length).fill(meta) };
}

/** The diff file taking set `from` to set `to` (both of prefixes (hi, 0) with one entry byte). */
function diffFile(from: readonly number[], to: readonly number[]): Uint8Array {
  const added = to.filter((h) => !from.includes(h));
  const removed = from.filter((h) => !to.includes(h)).sort((x, y) => x - y);
  return encodeMirrorFile(MIRROR_KIND_DIFF, entries(added), { count: removed.length, hi: Uint32Array.from(removed), lo: new Uint32Array(removed.length) });
}

/** Version `version` of set `set`, with the diffs given from older sets, signed by `signer` and recorded under `key`. */
function publication(key: MirrorKey, version: number, set: readonly number[], diffsFrom: ReadonlyMap<number, readonly number[]>, signer = key): MirrorPublication {
  const full = encodeMirrorFile(MIRROR_KIND_FULL, entries(set));
  const files = new Map<string, MirrorFileBodies>([[fullPath(version), fileBodies(fullPath(version), full)]]);
  const diffs: { from: number; url: string; bytes: number }[] = [];
  for (const [from, older] of diffsFrom) {
    const bytes = diffFile(older, set);
    files.set(diffPath(from, version), fileBodies(diffPath(from, version), bytes));
    diffs.push({ from, url: `/v1/mirror/${diffPath(from, version)}`, bytes: bytes.length });
  }
  const unsigned = {
    version,
    created_at: new Date().toISOString(),
    count: set.length,
    sha256: createHash('sha256').update(full.subarray(MIRROR_HEADER_BYTES)).digest('hex'),
    full: { url: `/v1/mirror/${fullPath(version)}`, bytes: full.length },
    diffs,
  };
  return { version, manifest: JSON.stringify({ ...unsigned, signature: signText(signer, manifestSigningText(unsigned)) }), publicKey: JSON.stringify({ public_key: key.publicKey }), files };
}

/** Once the looks a version's notification and the polls after it start have ended. */
async function looksPassed(store: StoreMirror): Promise<void> {
  await store.settled();
  await new Promise((resolve) => setTimeout(resolve, 300));
  await store.settled();
}

test("a follower's store mirror builds a version from the base and the diffs after it, refuses one badly signed or whose diff makes another set, and a base clears what came before", { timeout: 60_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const t = await tempDataDir();
    const key = await createMirrorKey(t.dir.mirror);
    const other = await createMirrorKey(`${t.dir.mirror}-other`);
    const pool = storePool(location, 2);
    const active = async () => {};
    const sets = [[], [1, 2, 3], [1, 3, 4], [3, 4, 5, 6], [4, 5, 6], [5, 6, 7], [5, 6, 8], [6, 7, 8]];
    const mirror: { store?: StoreMirror } = {};
    try {
      await recordMirrorVersion(pool, location, publication(key, 1, sets[1]!, new Map()), true, active);
      await recordMirrorVersion(pool, location, publication(key, 2, sets[2]!, new Map([[1, sets[1]!]])), false, active);
      // Version 3 offers no diff from the base: only the chain of one-step diffs reaches it.
      const third = publication(key, 3, sets[3]!, new Map([[2, sets[2]!]]));
      await recordMirrorVersion(pool, location, third, false, active);
      // A lease lost at the commit records nothing.
      await assert.rejects(
        recordMirrorVersion(pool, location, publication(key, 4, sets[4]!, new Map([[3, sets[3]!]])), false, async () => {
          throw new Error('the builder lease is no longer held');
        }),
        /no longer held/,
      );
      assert.equal((await newestMirrorVersion(pool, location))?.version, 3);

      const store = new StoreMirror({ location, logger: silentLogger, pollMs: 50 });
      mirror.store = store;
      await until('version 3 served', 10_000, () => store.publication?.version === 3);
      const served = store.publication!;
      assert.deepEqual(served.files.get(fullPath(3))!.identity, encodeMirrorFile(MIRROR_KIND_FULL, entries(sets[3]!)), 'the full file written from base 1 and the diffs 1→2→3');
      assert.deepEqual([...served.files.keys()].sort(), [diffPath(2, 3), fullPath(3)]);
      assert.equal(served.manifest, third.manifest, 'the manifest as it was signed');
      assert.deepEqual(served.files.get(diffPath(2, 3))!.identity, third.files.get(diffPath(2, 3))!.identity);

      // Signed by another key than the one recorded: not served, version 3 stays.
      await recordMirrorVersion(pool, location, publication(key, 4, sets[4]!, new Map([[3, sets[3]!]]), other), false, active);
      await looksPassed(store);
      assert.equal(store.publication?.version, 3);

      // The next good version is served from the one held and its diff.
      await recordMirrorVersion(pool, location, publication(key, 5, sets[5]!, new Map([[3, sets[3]!]])), true, active);
      await until('version 5 served', 10_000, () => store.publication?.version === 5);
      assert.deepEqual(store.publication!.files.get(fullPath(5))!.identity, encodeMirrorFile(MIRROR_KIND_FULL, entries(sets[5]!)));
      // A base deleted every version before it.
      const client = await testClient(location);
      try {
        assert.deepEqual((await client.query<{ version: string }>('SELECT version FROM mirror_versions ORDER BY version')).rows.map((r) => Number(r.version)), [5]);
      } finally {
        await client.end();
      }
      // A diff that does not make the set its manifest names (a store written by something else): refused, version 5 stays.
      const sixth = publication(key, 6, sets[6]!, new Map([[5, sets[5]!]]));
      const files = new Map(sixth.files);
      files.set(diffPath(5, 6), fileBodies(diffPath(5, 6), diffFile(sets[5]!, [5, 6, 9])));
      await recordMirrorVersion(pool, location, { ...sixth, files }, false, active);
      await looksPassed(store);
      assert.equal(store.publication?.version, 5);
      await recordMirrorVersion(pool, location, publication(key, 7, sets[7]!, new Map([[5, sets[5]!]])), false, active);
      await until('version 7 served', 10_000, () => store.publication?.version === 7);
      assert.deepEqual(store.publication!.files.get(fullPath(7))!.identity, encodeMirrorFile(MIRROR_KIND_FULL, entries(sets[7]!)));

      // A follower given the builder's public key serves only what is recorded under it: a store
      // that holds another key with versions it signed (written by something other than the builder) is refused.
      const pinned = new StoreMirror({ location, logger: silentLogger, pollMs: 50, publicKey: key.publicKey });
      const pinnedElsewhere = new StoreMirror({ location, logger: silentLogger, pollMs: 50, publicKey: other.publicKey });
      try {
        await until('version 7 under the key given', 10_000, () => pinned.publication?.version === 7);
        await looksPassed(pinnedElsewhere);
        assert.equal(pinnedElsewhere.publication, null, 'nothing recorded under the key given');
        await recordMirrorVersion(pool, location, publication(other, 8, sets[6]!, new Map(), other), true, active);
        await until('version 8 served where its key is trusted', 10_000, () => store.publication?.version === 8);
        await until('version 8 under the key given', 10_000, () => pinnedElsewhere.publication?.version === 8);
        await looksPassed(pinned);
        assert.equal(pinned.publication?.version, 7, 'version 8 refused: recorded under another key');
      } finally {
        await pinned.close();
        await pinnedElsewhere.close();
      }

      // A follower starting now builds version 8 from its base.
      const fresh = new StoreMirror({ location, logger: silentLogger, pollMs: 50 });
      try {
        await until('version 8 from its base', 10_000, () => fresh.publication?.version === 8);
        assert.deepEqual(fresh.publication!.files.get(fullPath(8))!.identity, store.publication!.files.get(fullPath(8))!.identity);
        assert.equal(fresh.publication!.manifest, store.publication!.manifest);
      } finally {
        await fresh.close();
      }
    } finally {
      await mirror.store?.close();
      await pool.end();
      await t.cleanup();
    }
  });
});

test("a follower's store mirror makes the next version from the one it holds, and from the base when that does not make the set signed", { timeout: 60_000 }, async () => {
  await withTestSchema(async (location) => {
    await migrate(location);
    const t = await tempDataDir();
    const key = await createMirrorKey(t.dir.mirror);
    const pool = storePool(location, 2);
    const active = async () => {};
    const sets = [[], [1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6]];
    /** Version `p` with its diff from base 1 (set [1, 9]) replaced by one of the same length that makes another set. */
    const withWrongDiff = (p: MirrorPublication, wrong: number): MirrorPublication => {
      const files = new Map(p.files);
      files.set(diffPath(wrong, p.version), fileBodies(diffPath(wrong, p.version), diffFile([1, 9], [4, 5, 7])));
      return { ...p, files };
    };
    const store = new StoreMirror({ location, logger: silentLogger, pollMs: 50 });
    try {
      await recordMirrorVersion(pool, location, publication(key, 1, sets[1]!, new Map()), true, active);
      await recordMirrorVersion(pool, location, publication(key, 2, sets[2]!, new Map([[1, sets[1]!]])), false, active);
      await until('version 2 served', 10_000, () => store.publication?.version === 2);

      // The store restored from an older copy, whose versions 1 and 2 were other sets: the diff from
      // version 2 does not make version 3 from the set held as 2, and it is made from the base instead.
      const client = await testClient(location);
      try {
        await client.query('DELETE FROM mirror_versions');
      } finally {
        await client.end();
      }
      const restored = [[], [1, 9], [2, 9]];
      await recordMirrorVersion(pool, location, publication(key, 1, restored[1]!, new Map()), true, active);
      await recordMirrorVersion(pool, location, publication(key, 2, restored[2]!, new Map([[1, restored[1]!]])), false, active);
      await recordMirrorVersion(pool, location, publication(key, 3, sets[3]!, new Map([[2, restored[2]!], [1, restored[1]!]])), false, active);
      await until('version 3 served', 10_000, () => store.publication?.version === 3);
      assert.deepEqual(store.publication!.files.get(fullPath(3))!.identity, encodeMirrorFile(MIRROR_KIND_FULL, entries(sets[3]!)));

      // The way from the base is wrong (a diff of the right length), the one from the version held right: made from the one held.
      await recordMirrorVersion(pool, location, withWrongDiff(publication(key, 4, sets[4]!, new Map([[3, sets[3]!], [1, restored[1]!]])), 1), false, active);
      await until('version 4 served', 10_000, () => store.publication?.version === 4);
      assert.deepEqual(store.publication!.files.get(fullPath(4))!.identity, encodeMirrorFile(MIRROR_KIND_FULL, entries(sets[4]!)));

      // Of the versions before the newest, the store keeps only the one-step diffs that lead to it.
      await recordMirrorVersion(pool, location, publication(key, 5, [5, 6], new Map([[4, sets[4]!], [1, restored[1]!]])), false, active);
      await until('version 5 served', 10_000, () => store.publication?.version === 5);
      const kept = await testClient(location);
      try {
        const rows = await kept.query<{ path: string }>("SELECT DISTINCT path FROM mirror_files WHERE path LIKE 'diff/%' ORDER BY path");
        assert.deepEqual(rows.rows.map((r) => r.path), ['diff/1/2', 'diff/1/5', 'diff/2/3', 'diff/3/4', 'diff/4/5']);
      } finally {
        await kept.end();
      }
    } finally {
      await store.close();
      await pool.end();
      await t.cleanup();
    }
  });
});
