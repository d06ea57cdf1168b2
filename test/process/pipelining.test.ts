import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { createKey, edgeDataDir } from '../fixtures/edge-server.js';
import { startServer } from '../server-process.js';

/**
 * HTTP/1.1 clients may pipeline: send the next request before the answer to
 * the last. uWebSockets.js drops a connection's pipelined requests when an
 * earlier answer is still pending, so every request must be answered within
 * its handler or its body's last chunk, whatever the number of threads.
 */

/** Write `requests` in one go on one connection; the status line and body of each answer, in order. */
function pipeline(port: number, requests: readonly string[]): Promise<{ status: number; body: string }[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(requests.join('')));
    let buffer = Buffer.alloc(0);
    const answers: { status: number; body: string }[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`${answers.length} of ${requests.length} answers after 10 s`));
    }, 10_000);
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const headEnd = buffer.indexOf('\r\n\r\n');
        if (headEnd < 0) break;
        const head = buffer.toString('latin1', 0, headEnd);
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (buffer.length < headEnd + 4 + length) break;
        answers.push({ status: Number(head.slice(9, 12)), body: buffer.toString('utf8', headEnd + 4, headEnd + 4 + length) });
        buffer = buffer.subarray(headEnd + 4 + length);
      }
      if (answers.length === requests.length) {
        clearTimeout(timer);
        socket.end();
        resolve(answers);
      }
    });
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      if (answers.length < requests.length) reject(new Error(`connection closed after ${answers.length} of ${requests.length} answers`));
    });
  });
}

describe('pipelined requests on one connection', { concurrency: true }, () => {
  for (const threads of [1, 2]) {
    test(`are all answered, in order, by ${threads} serving thread(s)`, { timeout: 120_000 }, async () => {
      const data = await edgeDataDir();
      const key = await createKey(data.dataDir);
      const server = await startServer(data.dataDir, { args: ['--threads', String(threads)] });
      try {
        const port = Number(new URL(server.base).port);
        const auth = `Authorization: Bearer ${key}\r\n`;
        const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n${auth}\r\n`;
        const body = JSON.stringify({ upis: ['pipelined.one@ybl', 'pipelined.two@okaxis'] });
        const post = `POST /v1/verify/upi/batch HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
        const requests = [
          get('/v1/verify/upi?upi=first.payee@ybl'),
          get('/v1/verify/upi?upi=second.payee@paytm'),
          post,
          get('/v1/verify/upi?upi=third.payee@oksbi'),
          get('/v1/verify/upi?upi=not-a-vpa'),
        ];
        // Several rounds: connections land on either thread.
        for (let round = 0; round < 6; round++) {
          const answers = await pipeline(port, requests);
          assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200, 400]);
          assert.equal(JSON.parse(answers[0]!.body).upi, 'first.payee@ybl');
          assert.equal(JSON.parse(answers[1]!.body).upi, 'second.payee@paytm');
          assert.equal(JSON.parse(answers[2]!.body).total, 2);
          assert.equal(JSON.parse(answers[3]!.body).upi, 'third.payee@oksbi');
          assert.equal(JSON.parse(answers[4]!.body).error, 'bad_request');
        }
      } finally {
        assert.equal(await server.stop(), 0);
        await data.cleanup();
      }
    });
  }
});
