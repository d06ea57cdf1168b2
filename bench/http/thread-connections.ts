/**
 * One keep-alive connection to each serving thread of a server. The threads
 * share the port (SO_REUSEPORT): the kernel hands each new connection to
 * one of them and every request on it goes to that thread, so asking a
 * thread something means asking on a connection it holds. Which thread
 * holds a connection is learnt from its answer to /readyz (`thread`; a
 * server with one serving thread names none, and it is thread 0).
 */
import { connect, type Socket } from 'node:net';

export interface Answer {
  readonly status: number;
  readonly body: string;
}

const HEADER_END = Buffer.from('\r\n\r\n');

/** A keep-alive HTTP/1.1 connection, one request at a time, answers read by Content-Length. */
export class PinnedConnection {
  readonly #socket: Socket;
  readonly #host: string;
  #buffer: Buffer = Buffer.alloc(0);
  #waiting: { resolve(answer: Answer): void; reject(error: Error): void } | null = null;
  /** Requests queue behind each other: one on the wire at a time. */
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;

  private constructor(socket: Socket, host: string) {
    this.#socket = socket;
    this.#host = host;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      this.#closed = true;
      this.#waiting?.reject(new Error('connection closed'));
      this.#waiting = null;
    });
  }

  static open(port: number, host = '127.0.0.1'): Promise<PinnedConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port }, () => {
        socket.off('error', reject);
        resolve(new PinnedConnection(socket, host));
      });
      socket.once('error', reject);
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** GET `path`; rejects when the connection closes first. */
  get(path: string, token?: string): Promise<Answer> {
    const run = this.#queue.then(
      () =>
        new Promise<Answer>((resolve, reject) => {
          if (this.#closed) {
            reject(new Error('connection closed'));
            return;
          }
          this.#waiting = { resolve, reject };
          const auth = token === undefined ? '' : `Authorization: Bearer ${token}\r\n`;
          this.#socket.write(`GET ${path} HTTP/1.1\r\nHost: ${this.#host}\r\n${auth}\r\n`);
        }),
    );
    this.#queue = run.catch(() => {});
    return run;
  }

  close(): void {
    this.#closed = true;
    this.#socket.destroy();
  }

  #onData(chunk: Buffer): void {
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    const headerEnd = this.#buffer.indexOf(HEADER_END);
    if (headerEnd < 0) return;
    const head = this.#buffer.toString('latin1', 0, headerEnd);
    const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
    const end = headerEnd + 4 + length;
    if (this.#buffer.length < end) return;
    const status = Number(head.slice(9, 12));
    const body = this.#buffer.toString('utf8', headerEnd + 4, end);
    this.#buffer = this.#buffer.subarray(end);
    const waiting = this.#waiting;
    this.#waiting = null;
    waiting?.resolve({ status, body });
  }
}

/** The serving thread `connection` is held by, from its /readyz answer. */
async function threadOf(connection: PinnedConnection): Promise<number> {
  const answer = await connection.get('/readyz');
  if (answer.status !== 200) throw new Error(`/readyz answered ${answer.status}: ${answer.body}`);
  return (JSON.parse(answer.body) as { thread?: number }).thread ?? 0;
}

/**
 * A connection to each of a server's `threads` serving threads. A
 * connection the server closes (an idle one, after its timeout) is opened
 * again to the same thread when next used.
 */
export class ThreadConnections {
  readonly #port: number;
  readonly #connections: (PinnedConnection | null)[];
  #opening: Promise<void> | null = null;

  private constructor(port: number, threads: number) {
    this.#port = port;
    this.#connections = Array.from({ length: threads }, () => null);
  }

  static async open(port: number, threads: number): Promise<ThreadConnections> {
    const set = new ThreadConnections(port, threads);
    await set.#fill();
    return set;
  }

  get threads(): number {
    return this.#connections.length;
  }

  /** GET `path` from serving thread `thread`. */
  async get(thread: number, path: string, token?: string): Promise<Answer> {
    for (let attempt = 0; ; attempt++) {
      let connection = this.#connections[thread];
      if (connection === null || connection === undefined || connection.closed) {
        await this.#fill();
        connection = this.#connections[thread]!;
      }
      try {
        return await connection.get(path, token);
      } catch (error) {
        if (attempt >= 3) throw error;
      }
    }
  }

  /** GET `path` from every thread, in thread order. */
  every(path: string, token?: string): Promise<Answer[]> {
    return Promise.all(this.#connections.map((_, thread) => this.get(thread, path, token)));
  }

  close(): void {
    for (const connection of this.#connections) connection?.close();
    this.#connections.fill(null);
  }

  /** Open connections until every thread holds one (each new connection lands on a thread the kernel picks). */
  #fill(): Promise<void> {
    this.#opening ??= (async () => {
      try {
        for (let attempt = 0; this.#connections.some((c) => c === null || c.closed); attempt++) {
          if (attempt >= 500) throw new Error(`no connection reached every one of ${this.#connections.length} serving threads in 500 attempts`);
          const connection = await PinnedConnection.open(this.#port);
          const thread = await threadOf(connection);
          const held = this.#connections[thread];
          if (thread < this.#connections.length && (held === null || held === undefined || held.closed)) this.#connections[thread] = connection;
          else connection.close();
        }
      } finally {
        this.#opening = null;
      }
    })();
    return this.#opening;
  }
}
