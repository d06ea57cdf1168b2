import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tempFileName, tempFileWriter } from '../../src/common/atomic-file.js';
import type { Logger } from '../../src/common/logger.js';
import { currentBootId, processStartTicks } from '../../src/common/process-identity.js';
import { removeStaleTempFiles } from '../../src/common/temp-cleanup.js';

// Temporary files name their writer (pid, start time, boot): cleanup removes
// those of writers that have ended, and leaves everything else.

function liveProcess() {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  const exited = once(child, 'exit');
  return {
    pid: child.pid!,
    stop: async () => {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

function identity(pid: number) {
  const startTicks = processStartTicks(pid);
  const bootId = currentBootId();
  assert.ok(startTicks !== null && bootId !== null, 'these cases need /proc');
  return { pid, startTicks, bootId };
}

const named = (base: string, id: { pid: number; startTicks: number; bootId: string }, random = '0a1b2c3d') =>
  `.tmp-${base}.${id.pid}-${id.startTicks}-${id.bootId.slice(0, 8)}.${random}`;

function recordingLogger() {
  const lines: { message: string; fields: Record<string, unknown> }[] = [];
  const record = (fields: Record<string, unknown>, message: string) => lines.push({ message, fields });
  const logger: Logger = { debug: record, info: record, warn: record, error: record };
  return { logger, lines };
}

test('temporary file names carry the writer, and are told apart from names of other forms', () => {
  const self = identity(process.pid);
  const name = tempFileName('snapshot-20261122T051700123Z-3fa9c1.upisnap');
  assert.match(name, /^\.tmp-snapshot-20261122T051700123Z-3fa9c1\.upisnap\.\d+-\d+-[0-9a-f]{8}\.[0-9a-f]{8}$/);
  assert.deepEqual(tempFileWriter(name), { pid: self.pid, startTicks: self.startTicks, bootId: self.bootId.slice(0, 8) });
  assert.notEqual(tempFileName('x'), tempFileName('x'), 'unique per call');
  // Names older versions wrote: a pid alone.
  assert.deepEqual(tempFileWriter('.tmp-cluster-ids.bin.4242.deadbeef'), { pid: 4242 });
  assert.deepEqual(tempFileWriter('.tmp-ingest-4242-0badf00d'), { pid: 4242 });
  assert.deepEqual(tempFileWriter('.tmp-0000001700000-abcdef12.ndjson.0-33554432.c0.p8.v3.4242.17'), { pid: 4242 });
  for (const foreign of ['.tmp-', '.tmp-notes.txt', '.tmp-x.4242', '.tmp-x.4242.nothex!', '.tmp-x.0.deadbeef', '.tmp-x.99999999999.deadbeef', '.tmp-ingest-x-deadbeef', 'x.4242.deadbeef', '.tmp-x.4242-1-DEADBEEF.deadbeef']) {
    assert.equal(tempFileWriter(foreign), null, foreign);
  }
});

test('cleanup removes the temporary files of ended writers and keeps those of live ones, foreign names and folders', async () => {
  const root = await mkdtemp(join(tmpdir(), 'upi-risk-temp-cleanup-'));
  const live = liveProcess();
  const ended = liveProcess();
  try {
    const a = join(root, 'a');
    const b = join(root, 'b');
    await mkdir(a);
    await mkdir(b);
    const liveId = identity(live.pid);
    const endedId = identity(ended.pid);
    await ended.stop();
    const otherBoot = { ...liveId, bootId: liveId.bootId.startsWith('0') ? `1${liveId.bootId.slice(1)}` : `0${liveId.bootId.slice(1)}` };

    const kept = [
      tempFileName('own.bin'), // this process
      named('live.bin', liveId), // a live writer
      `.tmp-legacy.bin.${live.pid}.deadbeef`, // pid alone, live, written after it started
      '.tmp-notes.txt', // forms no writer here makes
      `.tmp-x.${ended.pid}`,
      `.tmp-x.99999999999.deadbeef`,
      `scratch.${ended.pid}.deadbeef`,
      'snapshot-20261122T051700123Z-3fa9c1.upisnap',
    ];
    const removed = [
      named('ended.bin', endedId), // its writer is gone
      named('reused.bin', { ...liveId, startTicks: liveId.startTicks + 1 }), // its pid now names another process
      named('boot.bin', otherBoot), // written before a reboot
      `.tmp-legacy.bin.${ended.pid}.deadbeef`,
      `.tmp-ingest-${ended.pid}-0badf00d`,
      `.tmp-0000001700000-abcdef12.ndjson.0-33554432.c0.p8.v3.${ended.pid}.17`,
      `.tmp-old.bin.${live.pid}.cafef00d`, // pid alone, live, but started after the file was written (below)
    ];
    let bytes = 0;
    for (const [i, name] of [...kept, ...removed].entries()) {
      const size = 100 + i;
      if (removed.includes(name)) bytes += size;
      await writeFile(join(i % 2 === 0 ? a : b, name), Buffer.alloc(size));
    }
    const hourAgo = new Date(Date.now() - 3_600_000);
    const old = `.tmp-old.bin.${live.pid}.cafef00d`;
    await utimes(join((kept.length + removed.indexOf(old)) % 2 === 0 ? a : b, old), hourAgo, hourAgo);
    // A folder with a removable name is not a file: it stays.
    await mkdir(join(a, named('dir.bin', endedId, 'ffffffff')));

    const { logger, lines } = recordingLogger();
    const result = await removeStaleTempFiles([a, b, join(root, 'missing')], logger);
    assert.deepEqual(result, { files: removed.length, bytes });
    const left = [...(await readdir(a)), ...(await readdir(b))].sort();
    assert.deepEqual(left, [...kept, named('dir.bin', endedId, 'ffffffff')].sort());
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.equal(lines[0]!.fields.files, removed.length);
    assert.equal(lines[0]!.fields.bytes, bytes);

    // Nothing more to remove: nothing logged.
    const again = recordingLogger();
    assert.deepEqual(await removeStaleTempFiles([a, b], again.logger), { files: 0, bytes: 0 });
    assert.deepEqual(again.lines, []);
  } finally {
    await live.stop();
    await ended.stop();
    await rm(root, { recursive: true, force: true });
  }
});
