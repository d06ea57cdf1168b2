import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { readFile } from 'node:fs/promises';
import { MAX_EVIDENCE_BODY_BYTES } from '../../src/api/schemas.js';
import { startEdgeServer } from '../raw-http.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { until } from '../helpers.js';

/** Resident memory of a process, bytes (its main thread's view of the whole process). */
async function residentBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)![1]) * 1024;
}

/** A connection that has sent the head of an evidence upload and `bytes` of its body, without a key, and waits. */
async function unfinishedUpload(port: number, bytes: number): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  socket.write(`POST /v1/admin/evidence HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\nContent-Length: ${MAX_EVIDENCE_BODY_BYTES}\r\n\r\n`);
  const chunk = Buffer.alloc(1024 * 1024, 0x20);
  for (let sent = 0; sent < bytes; sent += chunk.length) {
    if (!socket.write(chunk)) await new Promise((resolve) => socket.once('drain', resolve));
  }
  return socket;
}

test('a body sent without a key is read and not kept: refused callers make the server hold none of it', { timeout: 120_000 }, async () => {
  const edge = await startEdgeServer({ args: ['--threads', '1'] });
  const sockets: Socket[] = [];
  try {
    const pid = edge.server.child.pid!;
    const before = await residentBytes(pid);
    const uploads = 8;
    const each = MAX_EVIDENCE_BODY_BYTES - 1024 * 1024;
    for (let i = 0; i < uploads; i++) sockets.push(await unfinishedUpload(edge.port, each));
    // Let the server read what was sent.
    await sleep(1500);
    const grown = (await residentBytes(pid)) - before;
    assert.ok(grown < (uploads * each) / 4, `resident memory grew by ${(grown / 2 ** 20).toFixed(0)} MiB for ${uploads} bodies of ${(each / 2 ** 20).toFixed(0)} MiB`);
    // Each is still answered 401 once its body ends.
    const last = sockets[0]!;
    let answer = '';
    last.on('data', (data: Buffer) => (answer += data.toString('latin1')));
    last.write(Buffer.alloc(MAX_EVIDENCE_BODY_BYTES - each, 0x20));
    await until('the refusal', 10_000, () => answer.includes('\r\n\r\n'));
    assert.match(answer, /^HTTP\/1\.1 401 /);
  } finally {
    for (const socket of sockets) socket.destroy();
    await edge.stop();
  }
});
