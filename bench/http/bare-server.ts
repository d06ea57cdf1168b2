/**
 * The ceiling: a bare uWebSockets.js server that answers every
 * request with one fixed JSON body, after reading the body of a POST. No
 * keys, no quotas, no lookup. Same TLS setup as the service (TLS 1.3 only),
 * so the two are measured with the same load, the same way, in one run.
 *
 *   node dist/bench/http/bare-server.js --body-bytes N [--port 0] [--threads 1] [--tls-cert F --tls-key F] [--service-headers]

 * With --threads N it serves on N threads sharing the port, as `serve
 * --threads N` does, so the service is compared with a ceiling of as many.
 *
 * With --service-headers it also writes the headers every service answer
 * carries (request id, data version and time, rate-limit state), to show
 * what they cost apart from the work behind them.
 *
 * Prints `listening <port>` once it accepts connections.
 */
import { parseArgs } from 'node:util';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import uWS from 'uWebSockets.js';
import { createTlsApp } from '../../src/http/tls.js';
import { AnswerHead, snapshotHeaderLines } from '../../src/http/answer-headers.js';
import { RequestIds } from '../../src/http/request-ids.js';
import { listen } from '../../src/http/server.js';
import { freePort } from '../../src/http/port-claim.js';

const { values: args } = parseArgs({
  options: {
    'body-bytes': { type: 'string', default: '400' },
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    'tls-cert': { type: 'string' },
    'tls-key': { type: 'string' },
    'service-headers': { type: 'boolean', default: false },
    threads: { type: 'string', default: '1' },
  },
  // Threads after the first run this file again, with the main thread's arguments.
  args: isMainThread ? process.argv.slice(2) : (workerData as { argv: string[] }).argv,
  strict: true,
});

/** A JSON object of exactly `bytes` bytes (at least the 12 of the empty one). */
export function fixedJson(bytes: number): string {
  const frame = '{"padding":""}';
  return `{"padding":"${'x'.repeat(Math.max(0, bytes - frame.length))}"}`;
}

const body = fixedJson(Number(args['body-bytes']));
const cert = args['tls-cert'];
const key = args['tls-key'];
const app = cert !== undefined && key !== undefined ? createTlsApp({ certFile: cert, keyFile: key }) : uWS.App();

const serviceHeaders = args['service-headers'];
const dataVersion = '20261122T074338123Z-000001';
const dataAsOf = new Date().toISOString();

const dataLines = snapshotHeaderLines(dataVersion, dataAsOf);
const requestIds = new RequestIds();
const head = new AnswerHead(requestIds);

const write = (res: uWS.HttpResponse): void => {
  if (serviceHeaders) {
    // The same header bytes, written the same way, as the service's answers.
    const rateLimit = { limit: 1_000_000_000, remaining: 999_999_999, reset: Math.ceil(Date.now() / 1000) + 60 };
    head.write(res, '200 OK', head.lines(dataLines, requestIds.next(), rateLimit));
  } else {
    res.writeStatus('200 OK').writeHeader('Content-Type', 'application/json');
  }
  res.end(body);
};

/** As the service does: inside the request handler the socket is corked already; a body read to its end is answered corked. */
const answerCorked = (res: uWS.HttpResponse): void => {
  res.cork(() => write(res));
};

app.any('/*', (res, req) => {
  if (req.getMethod() !== 'post') {
    write(res);
    return;
  }
  let aborted = false;
  res.onAborted(() => {
    aborted = true;
  });
  res.onData((_chunk, isLast) => {
    if (isLast && !aborted) answerCorked(res);
  });
});

const threads = Number(args.threads);
// Threads share the port through SO_REUSEPORT, which uWS sets only for a concrete port.
const port = Number(args.port) === 0 && threads > 1 ? await freePort(args.host) : Number(args.port);
const listening = await listen(app, args.host, port);
if (isMainThread) {
  const argv = [...process.argv.slice(2), '--port', String(listening.port)];
  // Every thread listens before the load starts: the kernel spreads connections at connect time.
  await Promise.all(
    Array.from({ length: threads - 1 }, () => {
      const worker = new Worker(new URL(import.meta.url), { workerData: { argv } });
      worker.unref();
      return new Promise((resolve, reject) => worker.once('message', resolve).once('error', reject));
    }),
  );
  process.stdout.write(`listening ${listening.port}\n`);
} else {
  parentPort!.postMessage('listening');
}
process.on('SIGTERM', () => {
  listening.close();
  (app as unknown as { close(): void }).close();
});
