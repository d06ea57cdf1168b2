import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly at: number;
}

/**
 * A webhook receiver on 127.0.0.1 for tests: records every request, and
 * answers `status` (503 while "down"), after `delayMs`.
 */
export interface Receiver {
  readonly url: string;
  readonly received: Received[];
  /** What it answers from now on. */
  status: number;
  delayMs: number;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const receiver = {
    url: '',
    received,
    status: 200,
    delayMs: 0,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const status = receiver.status;
      setTimeout(() => {
        if (status >= 200 && status < 300) received.push({ headers: req.headers, body: Buffer.concat(chunks).toString(), at: Date.now() });
        res.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : 'down');
      }, receiver.delayMs);
    });
  });
  server.keepAliveTimeout = 100;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return receiver;
}
