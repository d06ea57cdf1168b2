import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import fc from 'fast-check';
import { ErrorCode } from '../../src/common/errors.js';
import { MAX_MEMORY_BYTES, MIN_MEMORY_BYTES, cgroupMemoryLimit, memoryCgroupOf, parseMemorySize } from '../../src/common/memory-limit.js';

const GIB = 1024 ** 3;

test('a memory size is bytes, or a number with a binary unit', () => {
  assert.equal(parseMemorySize('max-memory', '2G'), 2 * GIB);
  assert.equal(parseMemorySize('max-memory', '1500M'), 1500 * 1024 ** 2);
  assert.equal(parseMemorySize('max-memory', '1.5GiB'), 1.5 * GIB);
  assert.equal(parseMemorySize('max-memory', '2gb'), 2 * GIB);
  assert.equal(parseMemorySize('max-memory', '1t'), 1024 * GIB);
  assert.equal(parseMemorySize('max-memory', '262144K'), 256 * 1024 ** 2);
  assert.equal(parseMemorySize('max-memory', String(GIB)), GIB);
});

test('any other text, or a size out of range, is a configuration error naming the option', () => {
  for (const text of ['', 'G', '2X', '-1G', '1e9', '2 G B', '0x10', '1G2', '63M', '2P', 'none']) {
    assert.throws(
      () => parseMemorySize('max-memory', text),
      (error: Error & { code?: string }) => error.code === ErrorCode.CONFIG && error.message.includes('--max-memory'),
      JSON.stringify(text),
    );
  }
});

test('property: a size written with any unit reads back as its bytes, or is refused out of range', () => {
  const units = [
    ['', 1],
    ['K', 1024],
    ['M', 1024 ** 2],
    ['G', 1024 ** 3],
    ['T', 1024 ** 4],
  ] as const;
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 2 ** 40 }), fc.constantFrom(...units), fc.constantFrom('', 'B', 'iB', 'b'), (n, [unit, scale], suffix) => {
      const text = `${n}${unit}${unit === '' ? '' : suffix}`;
      const bytes = n * scale;
      if (bytes < MIN_MEMORY_BYTES || bytes > MAX_MEMORY_BYTES) {
        assert.throws(() => parseMemorySize('max-memory', text));
      } else {
        assert.equal(parseMemorySize('max-memory', text), bytes);
      }
    }),
  );
});

/** A folder standing for `/`, with the files given (paths from the root). */
async function fakeRoot(files: Readonly<Record<string, string>>): Promise<{ root: string; cleanup: () => Promise<void> }> {
  const root = await mkdtemp(join(tmpdir(), 'upi-risk-cgroup-'));
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), text);
  }
  return { root, cleanup: () => rm(root, { recursive: true, force: true }) };
}

const MACHINE = 24 * GIB;
const V1_MOUNTS = [
  '30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
  '31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu',
  '34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
  '40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
].join('\n');

test("cgroup v1: the group's hierarchical limit, which an ancestor's smaller limit sets", async () => {
  const { root, cleanup } = await fakeRoot({
    '/proc/self/cgroup': '9:name=systemd:/\n4:memory:/jobs/serve\n1:cpu:/\n0::/\n',
    '/proc/self/mountinfo': V1_MOUNTS,
    '/sys/fs/cgroup/memory/jobs/serve/memory.limit_in_bytes': '9223372036854771712\n',
    '/sys/fs/cgroup/memory/jobs/serve/memory.stat': `cache 0\nhierarchical_memory_limit ${3 * GIB}\nhierarchical_memsw_limit 9223372036854771712\n`,
  });
  try {
    assert.equal(cgroupMemoryLimit({ root }, MACHINE), 3 * GIB);
    // cgroup v2 is mounted too, without the memory controller (a hybrid system): v1 holds the limit.
    assert.deepEqual(memoryCgroupOf({ root }), { version: 1, folder: '/sys/fs/cgroup/memory/jobs/serve', mountPoint: '/sys/fs/cgroup/memory' });
  } finally {
    await cleanup();
  }
});

test('cgroup v1 without a limit, or one above the machine, is none', async () => {
  const { root, cleanup } = await fakeRoot({
    '/proc/self/cgroup': '4:memory:/jobs/serve\n',
    '/proc/self/mountinfo': V1_MOUNTS,
    '/sys/fs/cgroup/memory/jobs/serve/memory.stat': 'hierarchical_memory_limit 9223372036854771712\n',
  });
  try {
    assert.equal(cgroupMemoryLimit({ root }, MACHINE), null);
    assert.equal(cgroupMemoryLimit({ root }, 1024 ** 2), null);
  } finally {
    await cleanup();
  }
});

test("cgroup v2: the smallest memory.max of the group and its ancestors, in a container's namespace too", async () => {
  const mounts = '25 30 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate';
  const { root, cleanup } = await fakeRoot({
    '/proc/self/cgroup': '0::/system.slice/upi-risk.service\n',
    '/proc/self/mountinfo': mounts,
    '/sys/fs/cgroup/system.slice/upi-risk.service/memory.max': 'max\n',
    '/sys/fs/cgroup/system.slice/memory.max': `${2 * GIB}\n`,
    '/sys/fs/cgroup/cgroup.controllers': 'cpuset cpu io memory pids\n',
  });
  // Inside a container, the group is the namespace's root.
  const inContainer = await fakeRoot({
    '/proc/self/cgroup': '0::/\n',
    '/proc/self/mountinfo': mounts,
    '/sys/fs/cgroup/memory.max': `${GIB}\n`,
    '/sys/fs/cgroup/cgroup.controllers': 'cpuset cpu io memory pids\n',
  });
  try {
    assert.equal(cgroupMemoryLimit({ root }, MACHINE), 2 * GIB);
    assert.deepEqual(memoryCgroupOf({ root }), { version: 2, folder: '/sys/fs/cgroup/system.slice/upi-risk.service', mountPoint: '/sys/fs/cgroup' });
    assert.equal(cgroupMemoryLimit({ root: inContainer.root }, MACHINE), GIB);
  } finally {
    await cleanup();
    await inContainer.cleanup();
  }
});

test('no cgroup files, or unreadable ones, give no limit', async () => {
  const { root, cleanup } = await fakeRoot({ '/proc/self/cgroup': 'garbage\n', '/proc/self/mountinfo': 'garbage - also\n' });
  try {
    assert.equal(cgroupMemoryLimit({ root }, MACHINE), null);
    assert.equal(cgroupMemoryLimit({ root: join(root, 'missing') }, MACHINE), null);
  } finally {
    await cleanup();
  }
});
