import { lookup } from 'node:dns/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { ErrorCode, ServingError } from '../common/errors.js';

/**
 * Keeping a listening address to one server. The serving threads bind with
 * SO_REUSEPORT, so beside another server doing the same (another `serve`
 * of another data directory, a follower) they would not fail: the kernel
 * would split the traffic between two servers answering from different
 * data.
 *
 * Two checks, both before the threads bind:
 * - `claimPort` holds, for the life of the process, a Unix socket in
 *   Linux's abstract namespace named after the address and port. The kernel
 *   gives a name to one socket at a time and takes it back when the process
 *   ends, however it ends, so of two servers started in the same instant on
 *   one address only one goes on. Elsewhere there is no such namespace, and
 *   the probe alone guards.
 * - `refuseTakenPort` binds the port without SO_REUSEPORT, which any other
 *   program listening there prevents, and releases it at once.
 */

/** The claim on `host`:`port` for the life of this process, and the probe; ERR_LISTEN when either finds the address taken. */
export async function claimPort(host: string, port: number): Promise<void> {
  const address = await addressBoundFor(host);
  const claim = createServer();
  try {
    await listen(claim, { path: `\0upi-risk/listen/[${address}]:${port}` });
    claims.push(claim);
  } catch (error) {
    // Only Linux has the abstract namespace: elsewhere the name is a path that cannot be made.
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') throw taken(host, port);
  }
  // Held until the process ends, without holding the event loop open.
  claim.unref();
  try {
    await refuseTakenPort(host, port);
  } catch (error) {
    // Another program listens there: the port is not this server's, nor its claim (claimFreePort chooses again).
    const held = claims.indexOf(claim);
    if (held >= 0) {
      claims.splice(held, 1);
      claim.close();
    }
    throw error;
  }
}

/**
 * A port nothing listens on now, asked of the kernel and claimed (claimPort)
 * for this process's life: two servers asked for any port at the same moment
 * may be handed the same one once each lets the kernel's go, and the claim
 * sends the second to choose again.
 */
export async function claimFreePort(host: string): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort(host);
    try {
      await claimPort(host, port);
      return port;
    } catch (error) {
      if (!(error instanceof ServingError) || attempt === FREE_PORT_ATTEMPTS) throw error;
    }
  }
}

const FREE_PORT_ATTEMPTS = 10;

/** A port nothing listens on now (asked of the kernel, then released). */
export async function freePort(host: string): Promise<number> {
  const server = createServer();
  await listen(server, { port: 0, host, exclusive: true });
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The claims this process holds: kept reachable, so that none is collected and closed. */
const claims: Server[] = [];

/** Fail with ERR_LISTEN when another program listens on `port` (see the module comment); the port is released before this resolves. */
export async function refuseTakenPort(host: string, port: number): Promise<void> {
  const probe = createServer();
  try {
    await listen(probe, { port, host: await addressBoundFor(host), exclusive: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') throw taken(host, port);
    throw new ServingError(ErrorCode.LISTEN, `cannot listen on ${host}:${port}: ${(error as Error).message}`);
  }
  await new Promise((resolve) => probe.close(resolve));
}

function taken(host: string, port: number): ServingError {
  return new ServingError(ErrorCode.LISTEN, `cannot listen on ${host}:${port}: another process listens there`);
}

function listen(server: Server, options: { path: string } | { port: number; host: string; exclusive: boolean }): Promise<void> {
  return new Promise<void>((resolve, reject) => server.listen(options, resolve).once('error', reject));
}

/**
 * The address the serving threads bind for `host`: uSockets binds the first
 * IPv6 address a name resolves to, else the first IPv4 one. A name that
 * does not resolve is left to fail as the threads would.
 */
async function addressBoundFor(host: string): Promise<string> {
  const found = await lookup(host, { all: true, verbatim: true }).catch(() => []);
  return (found.find((a) => a.family === 6) ?? found[0])?.address ?? host;
}
