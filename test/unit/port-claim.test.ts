import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { claimFreePort, claimPort, refuseTakenPort } from '../../src/http/port-claim.js';

// A server asked for any port claims the one it is handed, as one asked for
// a given port does: no two servers of this process or another share one.

test('ports chosen at the same moment are claimed, each once', async () => {
  const ports = await Promise.all(Array.from({ length: 20 }, () => claimFreePort('127.0.0.1')));
  assert.equal(new Set(ports).size, ports.length, ports.join(' '));
  // Claimed, and nothing listens there: a probe passes, a claim does not.
  await refuseTakenPort('127.0.0.1', ports[0]!);
  await assert.rejects(claimPort('127.0.0.1', ports[0]!), /another process listens there/);
});

test('a port another program listens on is refused, and its claim let go', async () => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  const { port } = holder.address() as { port: number };
  try {
    await assert.rejects(claimPort('127.0.0.1', port), /another process listens there/);
  } finally {
    await new Promise((resolve) => holder.close(resolve));
  }
  // The refused claim was let go: with the program gone, the port is claimed.
  await claimPort('127.0.0.1', port);
});
