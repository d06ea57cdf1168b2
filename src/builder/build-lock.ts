import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { DataDir } from '../common/data-dir.js';
import { BuildLockedError } from '../common/errors.js';
import { tryOwnerLock } from '../common/owner-lock.js';

/**
 * One build at a time per data directory: `state/build.lock` names the
 * process that holds it (common/owner-lock.ts), so a CLI build and a
 * server's background build do not race on the cluster id state, and a
 * lock left by a killed build is taken over.
 */
export const BUILD_LOCK_FILE = 'build.lock';

/** Who a build lock's content names (the format of every owner lock). */
export { parseOwnerLock as parseBuildLock } from '../common/owner-lock.js';

/**
 * Take the build lock of `dir`, or fail with ERR_BUILD_LOCKED when a live
 * build holds it. A stale lock (its owner has ended, or its content names
 * no one) is taken over. Resolves to the function that releases it.
 */
export async function acquireBuildLock(dir: DataDir): Promise<() => Promise<void>> {
  await mkdir(dir.state, { recursive: true });
  const taken = await tryOwnerLock(join(dir.state, BUILD_LOCK_FILE), (message, cause) => new BuildLockedError(message, { cause }));
  if ('holder' in taken) throw new BuildLockedError(`another build (pid ${taken.holder}) is running on ${dir.root}`, { holder: taken.holder });
  return taken.release;
}
