import { mkdir } from 'node:fs/promises';
import type { DataDir } from '../common/data-dir.js';
import { DataDirInUseError } from '../common/errors.js';
import { tryOwnerLock } from '../common/owner-lock.js';

/**
 * One `serve` per data directory. An embedded server builds and swaps
 * snapshots, holds the live delta, hands out data version positions and
 * appends to the journals of the directory as if it were their only
 * writer; a second one on the same directory would fork all of that (and
 * on the same port it would not even fail to listen: the serving threads
 * bind with SO_REUSEPORT, so the kernel would split the traffic between
 * the two). `state/serve.lock` names the process that holds the directory
 * (common/owner-lock.ts), so a lock left by a killed server is taken over.
 *
 * The commands that work beside a running server (`ingest`, `retract`,
 * `build`, `keys`) do not take it: each has its own way of sharing the
 * directory with it (new files, the journal's lock, the build lock).
 */

/**
 * Take the data directory for this process, or fail with
 * ERR_DATA_DIR_IN_USE when a live `serve` holds it. Resolves to the
 * function that releases it.
 */
export async function acquireServeLock(dir: DataDir): Promise<() => Promise<void>> {
  await mkdir(dir.state, { recursive: true });
  const taken = await tryOwnerLock(dir.serveLock, (message, cause) => new DataDirInUseError(message, { cause }));
  if ('holder' in taken) {
    throw new DataDirInUseError(`the data directory ${dir.root} is in use by another serve (pid ${taken.holder}); stop that one first, or give this one a directory of its own`);
  }
  return taken.release;
}
