/**
 * HTTP/1.1 over a raw socket, as a hostile or careless client speaks it:
 * bytes written as given (in several writes when asked), answers parsed off
 * the wire by a small parser that knows which answers are to HEAD requests.
 * For the tests of the HTTP edge that no ordinary client can express.
 */
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { edgeDataDir, createKey, type EdgeDataDir } from './fixtures/edge-server.js';
import { startServer, type RunningServer, type ServerOptions } from './server-process.js';

export interface RawAnswer {
  readonly status: number;
  /** Header names lower-cased; the last value of a repeated one. */
  readonly headers: ReadonlyMap<string, string>;
  readonly body: string;
}

export interface RawResult {
  readonly answers: RawAnswer[];
  /** The server closed (or reset) the connection. */
  readonly closed: boolean;
  /** The connection was reset rather than closed. */
  readonly reset: boolean;
  /** Bytes after the last whole answer: a partial answer, or a body where none belongs. */
  readonly rest: Buffer;
  /** Every byte received. */
  readonly raw: Buffer;
}

export interface RawOptions {
  /** Return once this many answers have arrived (the connection is then closed by the client). */
  readonly expect?: number;
  /** Indices of answers that answer a HEAD request: they have no body whatever their Content-Length. */
  readonly heads?: readonly number[];
  /** Pause between writes, ms; 0 writes everything in one go. */
  readonly gapMs?: number;
  /** Give up (and close from this side) after this long, ms; reported as closed: false. */
  readonly timeoutMs?: number;
  /** Half-close after the last write. */
  readonly end?: boolean;
  /** Write each chunk only once every chunk before it has been answered (one request per chunk). */
  readonly lockstep?: boolean;
  /** Speak TLS (any certificate accepted). */
  readonly tls?: boolean;
}

/** Parse whole answers off the front of `buffer`; the answers and the bytes left. */
export function parseAnswers(buffer: Buffer, heads: readonly number[] = [], already = 0): { answers: RawAnswer[]; rest: Buffer } {
  const answers: RawAnswer[] = [];
  let rest = buffer;
  for (;;) {
    const headEnd = rest.indexOf('\r\n\r\n');
    if (headEnd < 0) break;
    const lines = rest.toString('latin1', 0, headEnd).split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1] ?? NaN);
    if (Number.isNaN(status)) break;
    const headers = new Map<string, string>();
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    if (status === 100) {
      rest = rest.subarray(headEnd + 4);
      continue;
    }
    const isHead = heads.includes(already + answers.length);
    const length = isHead ? 0 : Number(headers.get('content-length') ?? 0);
    if (rest.length < headEnd + 4 + length) break;
    answers.push({ status, headers, body: rest.toString('utf8', headEnd + 4, headEnd + 4 + length) });
    rest = rest.subarray(headEnd + 4 + length);
  }
  return { answers, rest };
}

/** Write `chunks` on one new connection and collect what comes back (never rejects). */
export function rawRequest(port: number, chunks: readonly (string | Buffer)[], options: RawOptions = {}): Promise<RawResult> {
  const gapMs = options.gapMs ?? 0;
  const timeoutMs = options.timeoutMs ?? 5000;
  return new Promise((resolve) => {
    let received = Buffer.alloc(0);
    let reset = false;
    let settled = false;
    let answered = 0;
    let onAnswer: (() => void) | null = null;
    const socket: Socket =
      options.tls === true
        ? tlsConnect({ port, host: '127.0.0.1', rejectUnauthorized: false }, () => void write())
        : connect(port, '127.0.0.1', () => void write());
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const parsed = parseAnswers(received, options.heads);
      resolve({ answers: parsed.answers, closed, reset, rest: parsed.rest, raw: received });
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    socket.on('data', (data: Buffer) => {
      received = Buffer.concat([received, data]);
      answered = parseAnswers(received, options.heads).answers.length;
      onAnswer?.();
      if (options.expect !== undefined && answered >= options.expect) finish(false);
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ECONNRESET' || error.code === 'EPIPE') reset = true;
    });
    socket.on('close', () => {
      finish(true);
      onAnswer?.();
    });
    const write = async () => {
      for (let i = 0; i < chunks.length; i++) {
        if (socket.destroyed) return;
        socket.write(typeof chunks[i] === 'string' ? Buffer.from(chunks[i] as string, 'latin1') : (chunks[i] as Buffer));
        if (gapMs > 0 && i < chunks.length - 1) await new Promise((r) => setTimeout(r, gapMs));
        if (options.lockstep === true) {
          while (answered < i + 1 && !settled) await new Promise<void>((r) => (onAnswer = r));
        }
      }
      if (options.end === true && !socket.destroyed) socket.end();
    };
  });
}

/** A GET request's bytes. */
export function get(path: string, key: string | null, extra = ''): string {
  return `GET ${path} HTTP/1.1\r\nHost: x\r\n${key === null ? '' : `Authorization: Bearer ${key}\r\n`}${extra}\r\n`;
}

/** A batch POST's bytes (Content-Length from `body` unless `extra` says otherwise). */
export function postBatch(body: string, key: string, extra = `Content-Length: ${Buffer.byteLength(body)}\r\n`): string {
  return `POST /v1/verify/upi/batch HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n${extra}\r\n${body}`;
}

export interface EdgeServer {
  readonly server: RunningServer;
  readonly port: number;
  readonly key: string;
  /** A VPA the served snapshot holds (answered FLAGGED). */
  readonly flagged: string;
  stop(): Promise<void>;
}

/** A served snapshot (no build), an API key and a VPA it flags. */
export async function startEdgeServer(options: ServerOptions = {}): Promise<EdgeServer> {
  const data: EdgeDataDir = await edgeDataDir();
  const key = await createKey(data.dataDir);
  const server = await startServer(data.dataDir, options);
  const port = Number(new URL(server.base).port);
  try {
    const flagged = await findFlagged(server.base, key, options.tls === true);
    return {
      server,
      port,
      key,
      flagged,
      async stop() {
        const code = await server.stop();
        await data.cleanup();
        if (code !== 0) throw new Error(`server exited with ${code}:\n${server.output()}`);
      },
    };
  } catch (error) {
    await server.stop();
    await data.cleanup();
    throw error;
  }
}

/** Ask for the fake snapshot's likely keys (`<word>0@<provider>`) in batches; the first one flagged. */
async function findFlagged(base: string, key: string, tls: boolean): Promise<string> {
  const words = ['rahul', 'priya', 'shop', 'pay', 'amit', 'neha', 'kirana', 'gaming', 'win', 'loan', 'cash', 'store'];
  const providers = ['okaxis', 'ybl', 'paytm', 'ibl', 'axl', 'upi', 'oksbi', 'okhdfcbank', 'okicici', 'apl'];
  const port = Number(new URL(base).port);
  for (const id of ['0', '1', '2']) {
    const candidates = words.flatMap((w) => providers.map((p) => `${w}${id}@${p}`));
    for (let i = 0; i < candidates.length; i += 100) {
      const body = JSON.stringify({ upis: candidates.slice(i, i + 100) });
      const result = await rawRequest(port, [postBatch(body, key)], { expect: 1, tls });
      const answer = result.answers[0];
      if (answer?.status !== 200) throw new Error(`batch answered ${answer?.status}: ${answer?.body}`);
      const found = (JSON.parse(answer.body) as { results: { upi: string; status: string }[] }).results.find((r) => r.status === 'FLAGGED');
      if (found !== undefined) return found.upi;
    }
  }
  throw new Error('no flagged VPA found in the fake snapshot');
}

/** Assert-free check that a single lookup of `vpa` answers 200 for exactly that VPA with `status`; returns a description of what is wrong, or null. */
export async function lookupProblem(port: number, key: string, vpa: string, status: 'FLAGGED' | 'CLEARED', tls = false): Promise<string | null> {
  const result = await rawRequest(port, [get(`/v1/verify/upi?upi=${encodeURIComponent(vpa)}`, key)], { expect: 1, tls });
  const answer = result.answers[0];
  if (answer === undefined) return `no answer (closed: ${result.closed})`;
  if (answer.status !== 200) return `status ${answer.status}: ${answer.body}`;
  const body = JSON.parse(answer.body) as { upi: string; status: string };
  if (body.upi !== vpa || body.status !== status) return `answered ${answer.body}`;
  return null;
}
