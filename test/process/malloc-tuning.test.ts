import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { RECOMMENDED_GLIBC_TUNABLES, missingGlibcTunables, runsOnGlibc } from '../../src/common/malloc-tuning.js';
import { evidence, ingest, tempDataDir } from '../helpers.js';
import { startServer } from '../server-process.js';

const ALL = RECOMMENDED_GLIBC_TUNABLES.join(':');

test('missingGlibcTunables names the recommended tunables that are not set, whatever value the operator chose', () => {
  assert.deepEqual(missingGlibcTunables(undefined, true), [...RECOMMENDED_GLIBC_TUNABLES]);
  assert.deepEqual(missingGlibcTunables('', true), [...RECOMMENDED_GLIBC_TUNABLES]);
  assert.deepEqual(missingGlibcTunables(ALL, true), []);
  assert.deepEqual(missingGlibcTunables('glibc.malloc.hugetlb=1', true), ['glibc.malloc.mmap_threshold=131072']);
  // A value of the operator's own counts as set; other tunables are ignored.
  assert.deepEqual(missingGlibcTunables('glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=262144:glibc.malloc.hugetlb=0', true), []);
  // Off glibc the variable means nothing.
  assert.deepEqual(missingGlibcTunables(undefined, false), []);
});

test('npm start runs with exactly the recommended tunables', async () => {
  const pkg = JSON.parse(await readFile(new URL('../../../package.json', import.meta.url), 'utf8')) as { scripts: { start: string } };
  assert.match(pkg.scripts.start, new RegExp(`GLIBC_TUNABLES=${ALL.replaceAll('.', '\\.')} node `));
});

test('serve says which allocator settings are missing, and says nothing when they are set', { skip: !runsOnGlibc() && 'not on glibc' }, async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, [evidence('tuned@ybl', 'https://t.me/tuning')]);
  try {
    for (const [tunables, expected] of [
      [undefined, ALL],
      ['glibc.malloc.hugetlb=1', 'glibc.malloc.mmap_threshold=131072'],
      [ALL, null],
    ] as const) {
      const server = await startServer(t.dir.root, { env: { GLIBC_TUNABLES: tunables } });
      await server.stop();
      const hint = server
        .stderr()
        .split('\n')
        .filter((line) => line.includes('GLIBC_TUNABLES lacks'))
        .map((line) => (JSON.parse(line) as { missing: string }).missing);
      assert.deepEqual(hint, expected === null ? [] : [expected], `GLIBC_TUNABLES=${tunables}`);
    }
  } finally {
    await t.cleanup();
  }
});
