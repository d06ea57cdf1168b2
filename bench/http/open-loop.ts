/**
 * Open-loop, constant-rate HTTP/1.1 load generator: request k is due at
 * start + k / rate whether or not earlier answers have come back, and its
 * latency is measured from when it was due, not from when it was written.
 * A server (or this generator) that stalls therefore shows the stall in the
 * latency of every request that should have gone out meanwhile: no
 * coordinated omission. Latencies go into an HdrHistogram.
 *
 *   node dist/bench/http/open-loop.js --port P --rate R --lines FILE [--tls] [--method POST --path /v1/...]
 *       [--token KEY] [--duration 10] [--warmup 2] [--connections 64]
 *
 * `--lines` names a file with one request target (GET) or one body (POST) a
 * line; requests cycle through them. Prints one JSON object (OpenLoopResult).
 * SIGTERM ends the run early: nothing more is sent, the answers awaited are
 * collected as at the end of `--duration`, and the result covers the time
 * the run lasted (for load that must last as long as something else does).
 *
 * Requests are written as pre-encoded bytes on keep-alive connections and
 * answers parsed by Content-Length only, so the generator costs little CPU.
 * A request that falls due while every connection is waiting is pipelined
 * on the least busy one rather than delayed.
 */
import { readFileSync } from 'node:fs';
import { connect as connectTcp, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import * as hdr from 'hdr-histogram-js';

export interface OpenLoopResult {
  readonly rate: number;
  /** Answers per second over the measured window. */
  readonly achievedRate: number;
  readonly sent: number;
  readonly answered: number;
  /** Answers with a status other than 2xx. */
  readonly non2xx: number;
  /** Requests lost to connection errors or left unanswered at the end. */
  readonly errors: number;
  /** Latency percentiles in ms over the measured window, from when each request was due. */
  readonly p50: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
  /** The most this generator fell behind its schedule, ms: above a few ms its own latency shows in the figures. */
  readonly maxSendLag: number;
  /** The most requests written and not yet answered at once: a backlog that grows means one side falls behind. */
  readonly maxOutstanding: number;
  /** CPU this generator used over the whole run, s: near one a second, it is the bottleneck, not the server. */
  readonly cpuSeconds: number;
}

interface Connection {
  readonly socket: Socket;
  /** Due times of the requests written and not yet answered, oldest first. */
  readonly due: number[];
  head: number;
  /** An answer split across reads, kept until the rest arrives. */
  partial: Buffer | null;
}

const HEADER_END = Buffer.from('\r\n\r\n');
// Only the Content-Length header ends in this; matching it avoids a case-insensitive search.
const LENGTH_TAIL = Buffer.from('ength:');

const { values: args } = parseArgs({
  options: {
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string' },
    tls: { type: 'boolean', default: false },
    rate: { type: 'string' },
    lines: { type: 'string' },
    method: { type: 'string', default: 'GET' },
    path: { type: 'string', default: '/' },
    token: { type: 'string' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '64' },
  },
  strict: true,
});

const port = positive('port', args.port);
const rate = positive('rate', args.rate);
const durationMs = positive('duration', args.duration) * 1000;
const warmupMs = Number(args.warmup) * 1000;
const connectionCount = positive('connections', args.connections);
if (args.lines === undefined) throw new Error('--lines FILE is required');
if (args.method !== 'GET' && args.method !== 'POST') throw new Error('--method must be GET or POST');

function positive(name: string, text: string | undefined): number {
  const n = Number(text);
  if (text === undefined || !Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got ${text}`);
  return n;
}

/** Every request, encoded once, so the send loop only writes bytes. */
function encodeRequests(): Buffer[] {
  const lines = readFileSync(args.lines!, 'utf8').split('\n').filter((line) => line !== '');
  if (lines.length === 0) throw new Error(`${args.lines} holds no requests`);
  const auth = args.token === undefined ? '' : `Authorization: Bearer ${args.token}\r\n`;
  return lines.map((line) => {
    if (args.method === 'GET') return Buffer.from(`GET ${line} HTTP/1.1\r\nHost: ${args.host}\r\n${auth}\r\n`);
    const body = Buffer.from(line);
    const head = `POST ${args.path} HTTP/1.1\r\nHost: ${args.host}\r\n${auth}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    return Buffer.concat([Buffer.from(head), body]);
  });
}

function open(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = args.tls
      ? connectTls({ host: args.host, port, rejectUnauthorized: false, minVersion: 'TLSv1.3' }, () => resolve(socket))
      : connectTcp({ host: args.host, port }, () => resolve(socket));
    socket.setNoDelay(true);
    socket.once('error', reject);
  });
}

async function main(): Promise<void> {
  let stopAt = Number.POSITIVE_INFINITY;
  process.once('SIGTERM', () => {
    stopAt = performance.now();
  });
  const requests = encodeRequests();
  const histogram = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: 3 });
  let answered = 0;
  let measuredAnswers = 0;
  let non2xx = 0;
  let errors = 0;
  let outstanding = 0;
  let maxOutstanding = 0;
  let finished = false;

  const connections: Connection[] = [];
  for (let i = 0; i < connectionCount; i++) {
    const socket = await open();
    const c: Connection = { socket, due: [], head: 0, partial: null };
    socket.on('data', (chunk: Buffer) => onData(c, chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      if (finished) return;
      // Whatever was still awaited on this connection is lost.
      const lost = c.due.length - c.head;
      errors += lost;
      outstanding -= lost;
      c.due.length = 0;
      c.head = 0;
    });
    connections.push(c);
  }

  let start = 0;
  let measureFrom = 0;

  function onData(c: Connection, chunk: Buffer): void {
    const buf = c.partial === null ? chunk : Buffer.concat([c.partial, chunk]);
    c.partial = null;
    let pos = 0;
    const now = performance.now();
    while (pos < buf.length) {
      const headerEnd = buf.indexOf(HEADER_END, pos);
      if (headerEnd < 0) break;
      const lengthAt = buf.indexOf(LENGTH_TAIL, pos);
      let length = 0;
      if (lengthAt >= 0 && lengthAt < headerEnd) {
        let at = lengthAt + LENGTH_TAIL.length;
        while (buf[at] === 0x20) at++;
        for (let d = buf[at]!; d >= 0x30 && d <= 0x39; d = buf[++at]!) length = length * 10 + (d - 0x30);
      }
      const end = headerEnd + 4 + length;
      if (end > buf.length) break;
      const status = (buf[pos + 9]! - 0x30) * 100 + (buf[pos + 10]! - 0x30) * 10 + (buf[pos + 11]! - 0x30);
      const due = c.due[c.head++]!;
      if (c.head === c.due.length) {
        c.due.length = 0;
        c.head = 0;
      }
      outstanding--;
      answered++;
      if (status < 200 || status > 299) non2xx++;
      if (due >= measureFrom) {
        measuredAnswers++;
        histogram.recordValue(Math.max(1, Math.round((now - due) * 1000)));
      }
      pos = end;
    }
    if (pos < buf.length) c.partial = Buffer.from(buf.subarray(pos));
  }

  const interval = 1000 / rate;
  let sent = 0;
  let next = 0;
  let rr = 0;
  let maxSendLag = 0;

  /** The next connection with nothing awaited, else the one awaiting least. */
  function pick(): Connection {
    let best = connections[rr]!;
    for (let k = 0; k < connections.length; k++) {
      const c = connections[(rr + k) % connections.length]!;
      const waiting = c.due.length - c.head;
      if (waiting === 0) {
        rr = (rr + k + 1) % connections.length;
        return c;
      }
      if (waiting < best.due.length - best.head) best = c;
    }
    rr = (rr + 1) % connections.length;
    return best;
  }

  let end = 0;
  await new Promise<void>((resolve) => {
    start = performance.now();
    measureFrom = start + warmupMs;
    end = start + warmupMs + durationMs;
    next = start;
    const pump = () => {
      const now = performance.now();
      if (stopAt < end) end = Math.max(start, stopAt);
      while (next <= now && next < end) {
        const c = pick();
        c.due.push(next);
        if (++outstanding > maxOutstanding) maxOutstanding = outstanding;
        c.socket.write(requests[sent % requests.length]!);
        sent++;
        if (now - next > maxSendLag) maxSendLag = now - next;
        next = start + sent * interval;
      }
      if (next < end) setImmediate(pump);
      else resolve();
    };
    pump();
  });

  // Let the last answers arrive; whatever is still missing then counts as an error.
  const deadline = performance.now() + 5000;
  while (outstanding > 0 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  const windowMs = performance.now() - measureFrom;
  // Ended early by SIGTERM: the measured window is as long as the run lasted.
  const measuredMs = Math.max(0, end - measureFrom);
  errors += Math.max(0, outstanding);
  finished = true;
  for (const c of connections) c.socket.destroy();

  const ms = (us: number) => Math.round(us) / 1000;
  const result: OpenLoopResult = {
    rate,
    achievedRate: measuredMs === 0 ? 0 : Math.round((measuredAnswers / Math.min(windowMs, measuredMs)) * 1000),
    sent,
    answered,
    non2xx,
    errors,
    p50: ms(histogram.getValueAtPercentile(50)),
    p99: ms(histogram.getValueAtPercentile(99)),
    p999: ms(histogram.getValueAtPercentile(99.9)),
    max: ms(histogram.maxValue),
    maxSendLag: Math.round(maxSendLag * 1000) / 1000,
    maxOutstanding,
    cpuSeconds: cpuSecondsUsed(),
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

function cpuSecondsUsed(): number {
  const { user, system } = process.cpuUsage();
  return Math.round((user + system) / 1000) / 1000;
}

await main();
