/**
 * UpiRiskMirror with a directory: the state a sync takes is stored there
 * and a second mirror on the same directory starts from it, checked again;
 * a stored state that does not check out is refused by load() and ignored
 * by sync() and verify(); a directory that cannot be read never holds
 * verify() up. Writes flush the directory and survive an old file that
 * cannot be removed.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as nodeFs from 'node:fs/promises';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { UpiRiskMirror } from '../src/mirror.js';
import { MirrorDirectory, type NodeFiles } from '../src/mirror-directory.js';
import { MirrorChecksumError, MirrorFileError, MirrorReplayError, MirrorSignatureError, MirrorStorageError } from '../src/errors.js';
import { MIRROR_HEADER_BYTES, MIRROR_KIND_FULL, encodeMirrorFile } from '../src/mirror-format.js';
import type { FetchLike } from '../src/transport.js';
import { fakeClock } from './fakes.js';
import { API_KEY, FakeMirrorService, ed25519Keys, expectedCheck, flagSome, someVpas } from './mirror-fakes.js';

const VPAS = someVpas(3_000, 41);

let service: FakeMirrorService;
let base: string;

before(async () => {
  service = new FakeMirrorService();
  base = await service.listen();
  service.publish(flagSome(VPAS, 0.25, 42));
});

after(() => service.close());

/** A fetch that fails the test if called: the mirror must answer from its directory. */
const noNetwork: FetchLike = () => Promise.reject(new Error('no request was expected'));

const platformFetch: FetchLike = (url, init) => globalThis.fetch(url, init);

function mirrorOf(directory: string, options: { fetch?: FetchLike; publicKey?: string } = {}) {
  const clock = fakeClock();
  return new UpiRiskMirror({ baseUrl: base, apiKey: API_KEY, publicKey: service.keys.publicKey, directory, now: clock.now, sleep: clock.sleep, ...options });
}

async function withDirectory(work: (directory: string) => Promise<void>): Promise<void> {
  const directory = await mkdtemp(join(tmpdir(), 'upi-risk-mirror-'));
  try {
    await work(directory);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

function assertAnswersLatest(mirror: UpiRiskMirror): void {
  for (const upi of VPAS) assert.deepEqual(mirror.check(upi), expectedCheck(service.latest.set, upi), upi);
}

test('a second mirror on the directory starts from the stored state, with no request', async () => {
  await withDirectory(async (directory) => {
    const first = mirrorOf(directory);
    await first.sync();
    assert.deepEqual((await readdir(directory)).sort(), [`manifest.json`, `mirror-${service.latest.version}.bin`]);

    const second = mirrorOf(directory, { fetch: noNetwork });
    assert.equal(await second.load(), service.latest.version);
    assert.equal(second.version, service.latest.version);
    assertAnswersLatest(second);

    // verify() reads the directory by itself.
    const third = mirrorOf(directory, { fetch: noNetwork });
    const unflagged = VPAS.find((upi) => !service.latest.set.has(upi.toLowerCase()))!;
    assert.equal((await third.verify(unflagged)).answeredBy, 'mirror');
    assert.equal(third.version, service.latest.version);
  });
});

test('each sync replaces the stored state; the next mirror syncs on from it by diff', async () => {
  await withDirectory(async (directory) => {
    await mirrorOf(directory).sync();
    const stored = service.latest.version;
    service.publish(flagSome(VPAS, 0.25, 43));
    const second = mirrorOf(directory);
    service.requests.length = 0;
    assert.deepEqual(await second.sync(), { version: stored + 1, previousVersion: stored, applied: 'diff', count: service.latest.entries.count });
    assert.deepEqual(service.requests.map((r) => r.url), ['/v1/mirror/manifest', `/v1/mirror/diff/${stored}/${stored + 1}`]);
    // The older entry file is gone; no temporary file is left.
    assert.deepEqual((await readdir(directory)).sort(), ['manifest.json', `mirror-${stored + 1}.bin`]);
    const third = mirrorOf(directory, { fetch: noNetwork });
    assert.equal(await third.load(), stored + 1);
    assertAnswersLatest(third);
  });
});

test('a stored state that does not check out: load() says why, sync() starts afresh', async () => {
  await withDirectory(async (directory) => {
    await mirrorOf(directory).sync();
    const version = service.latest.version;
    const entryFile = join(directory, `mirror-${version}.bin`);
    const manifestFile = join(directory, 'manifest.json');
    const genuineEntries = await readFile(entryFile);
    const genuineManifest = await readFile(manifestFile, 'utf8');

    // An entry's band changed on disk.
    const changed = Buffer.from(genuineEntries);
    const meta = MIRROR_HEADER_BYTES + 8;
    changed[meta] = (changed[meta]! & 0xf0) | ((changed[meta]! & 15) === 0 ? 1 : 0);
    await writeFile(entryFile, changed);
    await assert.rejects(mirrorOf(directory, { fetch: noNetwork }).load(), MirrorChecksumError);

    // Cut short.
    await writeFile(entryFile, genuineEntries.subarray(0, genuineEntries.length - 3));
    await assert.rejects(mirrorOf(directory, { fetch: noNetwork }).load(), (e) => e instanceof MirrorFileError && e.problem === 'truncated');

    // The manifest's count changed on disk.
    await writeFile(entryFile, genuineEntries);
    await writeFile(manifestFile, JSON.stringify({ ...JSON.parse(genuineManifest), count: 1 }));
    await assert.rejects(mirrorOf(directory, { fetch: noNetwork }).load(), MirrorSignatureError);

    // Another key pinned than the one that signed what is stored.
    await writeFile(manifestFile, genuineManifest);
    await assert.rejects(mirrorOf(directory, { fetch: noNetwork, publicKey: ed25519Keys().publicKey }).load(), MirrorSignatureError);

    // The entry file gone.
    await rm(entryFile);
    await assert.rejects(mirrorOf(directory, { fetch: noNetwork }).load(), MirrorStorageError);

    // sync() ignores the bad state and downloads the full file, which replaces it.
    const healing = mirrorOf(directory);
    assert.equal(healing.version, null);
    assert.equal((await healing.sync()).applied, 'full');
    assert.equal(await mirrorOf(directory, { fetch: noNetwork }).load(), version);
  });
});

test('a stored version whose entries do not check out still bars an older manifest after a restart: no rollback', async () => {
  await withDirectory(async (directory) => {
    service.publish(flagSome(VPAS, 0.25, 43));
    const version = service.latest.version;
    await mirrorOf(directory).sync();
    const entryFile = join(directory, `mirror-${version}.bin`);
    const entries = await readFile(entryFile);
    entries[MIRROR_HEADER_BYTES + 7]! ^= 0x01;
    await writeFile(entryFile, entries);
    // An older manifest, genuinely signed, replayed to the restarted mirror.
    const stale = service.manifest(version - 1);
    service.manifestOverride = () => stale;
    try {
      const restarted = mirrorOf(directory);
      await assert.rejects(restarted.sync(), (e) => e instanceof MirrorReplayError && e.heldVersion === version && e.offeredVersion === version - 1);
      assert.equal(restarted.version, null);
      assert.ok((await readdir(directory)).includes(`mirror-${version}.bin`), 'the stored version is not replaced by the older one');
      service.manifestOverride = null;
      assert.deepEqual([(await restarted.sync()).applied, restarted.version], ['full', version]);
      assertAnswersLatest(restarted);
    } finally {
      service.manifestOverride = null;
    }
  });
});

test('an empty directory: load() holds nothing, check() waits for a sync', async () => {
  await withDirectory(async (directory) => {
    const mirror = mirrorOf(join(directory, 'not-yet'), { fetch: noNetwork });
    assert.equal(await mirror.load(), null);
    assert.equal(mirror.version, null);
  });
});

test('a directory that cannot be written: MirrorStorageError, and the synced state is not taken', async () => {
  await withDirectory(async (directory) => {
    const file = join(directory, 'a-file');
    await writeFile(file, 'not a directory');
    const mirror = mirrorOf(file);
    await assert.rejects(mirror.sync(), (e) => e instanceof MirrorStorageError && e.code === 'mirror_storage');
    assert.equal(mirror.version, null);
  });
});

/** A fetch whose manifest requests wait until `release()`; `reached` resolves when the first one arrives. */
function gatedManifestFetch() {
  let release!: () => void;
  let arrived!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const reached = new Promise<void>((resolve) => (arrived = resolve));
  const fetch: FetchLike = async (url, init) => {
    if (new URL(url).pathname === '/v1/mirror/manifest') {
      arrived();
      await gate;
    }
    return platformFetch(url, init);
  };
  return { fetch, reached, release };
}

test('an entry file missing from the directory: verify() asks the service, never waiting behind a sync in flight', async () => {
  await withDirectory(async (directory) => {
    await mirrorOf(directory).sync();
    await rm(join(directory, `mirror-${service.latest.version}.bin`));
    const unflagged = VPAS.find((upi) => !service.latest.set.has(upi.toLowerCase()))!;
    const { fetch, reached, release } = gatedManifestFetch();
    const mirror = mirrorOf(directory, { fetch });
    assert.equal((await mirror.verify(unflagged)).answeredBy, 'service');
    const syncing = mirror.sync();
    try {
      await reached;
      const answer = await Promise.race([mirror.verify(unflagged), delay(1_000).then(() => 'still waiting' as const)]);
      assert.notEqual(answer, 'still waiting', 'verify() waited for the sync');
      assert.deepEqual(answer !== 'still waiting' && [answer.answeredBy, answer.mirrorVersion, answer.verdict.status], ['service', null, 'CLEARED']);
    } finally {
      release();
    }
    // The sync replaces the stored state that did not check out, by the full file; then the mirror answers.
    assert.equal((await syncing).applied, 'full');
    assert.equal((await mirror.verify(unflagged)).answeredBy, 'mirror');
  });
});

test('a missing entry file is a stored state that does not check out: not read again, the next sync takes the full file', async () => {
  await withDirectory(async (directory) => {
    await mirrorOf(directory).sync();
    const entryFile = join(directory, `mirror-${service.latest.version}.bin`);
    const entries = await readFile(entryFile);
    await rm(entryFile);
    const mirror = mirrorOf(directory);
    const unflagged = VPAS.find((upi) => !service.latest.set.has(upi.toLowerCase()))!;
    assert.equal((await mirror.verify(unflagged)).answeredBy, 'service');
    // Put back, it is not looked for again: the stored state was judged once.
    await writeFile(entryFile, entries);
    assert.equal((await mirror.verify(unflagged)).answeredBy, 'service');
    assert.equal((await mirror.sync()).applied, 'full');
  });
});

test('a manifest that cannot be read (an I/O error) is read again before the next sync, never by verify()', async () => {
  await withDirectory(async (directory) => {
    await mirrorOf(directory).sync();
    const version = service.latest.version;
    const manifestFile = join(directory, 'manifest.json');
    const manifest = await readFile(manifestFile);
    // A directory in its place: reading it fails with EISDIR, an I/O error.
    await rm(manifestFile);
    await mkdir(manifestFile);
    const mirror = mirrorOf(directory);
    const unflagged = VPAS.find((upi) => !service.latest.set.has(upi.toLowerCase()))!;
    assert.equal((await mirror.verify(unflagged)).answeredBy, 'service');
    await rm(manifestFile, { recursive: true });
    await writeFile(manifestFile, manifest);
    assert.equal((await mirror.verify(unflagged)).answeredBy, 'service');
    service.requests.length = 0;
    // Read again first, the stored version is current: nothing is downloaded.
    assert.deepEqual(await mirror.sync(), { version, previousVersion: version, applied: 'none', count: service.latest.entries.count });
    assert.deepEqual(service.requests.map((r) => r.url), ['/v1/mirror/manifest']);
  });
});

test('an older entry file that cannot be removed fails no sync: the state is stored, and the next sync too', async () => {
  await withDirectory(async (directory) => {
    // A directory by an entry file's name: removing it fails.
    await mkdir(join(directory, 'mirror-0.bin'));
    await writeFile(join(directory, 'mirror-0.bin', 'kept'), 'x');
    const mirror = mirrorOf(directory);
    assert.equal((await mirror.sync()).version, service.latest.version);
    service.publish(flagSome(VPAS, 0.25, 44));
    assert.equal((await mirror.sync()).applied, 'diff');
    assert.equal(await mirrorOf(directory, { fetch: noNetwork }).load(), service.latest.version);
    assert.deepEqual((await readdir(directory)).sort(), ['manifest.json', 'mirror-0.bin', `mirror-${service.latest.version}.bin`]);
  });
});

test('a write flushes the directory after each rename: the entry file is named on disk before the manifest that names it', async () => {
  await withDirectory(async (directory) => {
    const steps: string[] = [];
    const files: NodeFiles = {
      mkdir: (path, options) => nodeFs.mkdir(path, options),
      readFile: (path) => nodeFs.readFile(path),
      readdir: (path) => nodeFs.readdir(path),
      rm: (path, options) => nodeFs.rm(path, options),
      rename: async (from, to) => {
        steps.push(`rename ${basename(to)}`);
        await nodeFs.rename(from, to);
      },
      open: async (path, flags) => {
        const handle = await nodeFs.open(path, flags);
        const isDirectory = path === directory;
        return {
          writeFile: (data) => handle.writeFile(data),
          sync: async () => {
            if (isDirectory) steps.push('flush directory');
            await handle.sync();
          },
          close: () => handle.close(),
        };
      },
    };
    const manifest = service.manifest();
    await new MirrorDirectory(directory, async () => files).write(manifest, encodeMirrorFile(MIRROR_KIND_FULL, service.latest.entries));
    assert.deepEqual(steps, [`rename mirror-${manifest.version}.bin`, 'flush directory', 'rename manifest.json', 'flush directory']);
    assert.equal((await new MirrorDirectory(directory).read())?.manifest.version, manifest.version);
  });
});
