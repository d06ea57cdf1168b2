import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { RECOMMENDED_GLIBC_TUNABLES, missingGlibcTunables, runsOnGlibc } from '../../src/common/malloc-tuning.js';
import { evidence, ingest, tempDataDir } from '../helpers.js';
import { BIN, CLI, startServer } from '../server-process.js';

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

/** What bin/upi-risk hands to `node` (a stand-in on PATH that prints its environment's tunables, its pid and its arguments), given GLIBC_TUNABLES. */
async function binHandsOn(tunables: string | undefined, args: readonly string[], viaLink = false): Promise<{ tunables: string; samePid: boolean; args: string[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'upi-bin-'));
  try {
    const command = viaLink ? join(dir, 'upi-risk') : BIN;
    if (viaLink) await symlink(BIN, command);
    const fakeNode = join(dir, 'node');
    await writeFile(fakeNode, '#!/bin/sh\nprintf \'%s\\n\' "$GLIBC_TUNABLES" "$$" "$@"\n');
    await chmod(fakeNode, 0o755);
    // The script's own pid, printed before it execs: the same process runs the CLI.
    const script = `echo $$; exec ${JSON.stringify(command)} "$@"`;
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${dir}:${process.env.PATH ?? ''}` };
    if (tunables === undefined) delete env.GLIBC_TUNABLES;
    else env.GLIBC_TUNABLES = tunables;
    const { stdout } = await promisify(execFile)('/bin/sh', ['-c', script, 'sh', ...args], { env });
    const [shellPid, seen, pid, main, ...rest] = stdout.trimEnd().split('\n');
    assert.equal(main, CLI, 'the CLI of the package the command is in');
    return { tunables: seen!, samePid: shellPid === pid, args: rest };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test('bin/upi-risk adds the recommended tunables that are missing, keeps the operator\'s, and execs the CLI with its arguments', async () => {
  assert.deepEqual(await binHandsOn(undefined, ['serve', '--data-dir', 'a dir']), { tunables: ALL, samePid: true, args: ['serve', '--data-dir', 'a dir'] });
  assert.equal((await binHandsOn('', ['--help'])).tunables, ALL);
  assert.equal((await binHandsOn(ALL, [])).tunables, ALL);
  assert.equal((await binHandsOn('glibc.malloc.hugetlb=0', [])).tunables, 'glibc.malloc.hugetlb=0:glibc.malloc.mmap_threshold=131072');
  assert.equal((await binHandsOn('glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=262144', [])).tunables, 'glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=262144:glibc.malloc.hugetlb=1');
  // A tunable whose name merely ends like a recommended one is another tunable; one named without a value is set (missingGlibcTunables agrees).
  assert.equal((await binHandsOn('x.glibc.malloc.hugetlb=0', [])).tunables, `x.glibc.malloc.hugetlb=0:${ALL}`);
  assert.equal((await binHandsOn('glibc.malloc.hugetlb', [])).tunables, 'glibc.malloc.hugetlb:glibc.malloc.mmap_threshold=131072');
  assert.deepEqual(missingGlibcTunables('glibc.malloc.hugetlb', true), ['glibc.malloc.mmap_threshold=131072']);
  // Run through a link, as npm installs it in node_modules/.bin: the CLI of the package the link leads to.
  assert.equal((await binHandsOn(undefined, ['--help'], true)).args.join(' '), '--help');
});

test('serve started by bin/upi-risk runs with the allocator settings, with none in its environment', { skip: !runsOnGlibc() && 'not on glibc' }, async () => {
  const t = await tempDataDir();
  await ingest(t.dir, t.root, [evidence('tuned@ybl', 'https://t.me/tuning')]);
  try {
    const server = await startServer(t.dir.root, { viaBin: true, env: { GLIBC_TUNABLES: undefined } });
    const answer = await fetch(`${server.base}/healthz`);
    assert.equal(answer.status, 200);
    await server.stop();
    assert.doesNotMatch(server.stderr(), /GLIBC_TUNABLES lacks/);
  } finally {
    await t.cleanup();
  }
});
