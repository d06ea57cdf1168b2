import { link, lstat, open, rename, unlink, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { tempFileName } from './atomic-file.js';
import { writerHasEnded, isValidBootId, isValidPid, ownIdentity, type ProcessIdentity } from './process-identity.js';

/**
 * A lock file that names the process holding it, so that a lock left by a
 * killed process is taken over even once its pid belongs to another
 * process, or the machine has rebooted (the build lock, the corrections
 * journal's lock):
 *
 *   pid=<pid> start=<clock ticks since boot> boot=<boot id>\n
 *
 * Where /proc does not give the start time, the lock holds the pid alone,
 * as older versions wrote it, and a live pid holds it (one that started
 * after the lock was written cannot be its owner, where that can be told).
 * Anything else in the file (empty, torn, garbage) is a stale lock.
 */

/** More than any lock this module writes; a longer file is garbage. */
const MAX_LOCK_BYTES = 256;
/** Rounds of "take it, or judge and clear the stale one"; more only when other processes keep racing for it. */
const ATTEMPTS = 4;

const IDENTITY_LOCK = /^pid=(\d{1,10}) start=(\d{1,15}) boot=([0-9a-f-]{36})\n?$/;
const PID_ONLY_LOCK = /^\s*(\d{1,10})\s*$/;

/** Who a lock's content names; null for content no version of this service writes. */
export type LockOwner = { readonly pid: number; readonly identity: ProcessIdentity | null };

export function parseOwnerLock(text: string): LockOwner | null {
  const full = IDENTITY_LOCK.exec(text);
  if (full !== null) {
    const pid = Number(full[1]);
    const bootId = full[3]!;
    if (!isValidPid(pid) || !isValidBootId(bootId)) return null;
    return { pid, identity: { pid, startTicks: Number(full[2]), bootId } };
  }
  const pidOnly = PID_ONLY_LOCK.exec(text);
  if (pidOnly === null) return null;
  const pid = Number(pidOnly[1]);
  return isValidPid(pid) ? { pid, identity: null } : null;
}

/** What this process writes into a lock it takes. */
export function ownerLockContent(): string {
  const self = ownIdentity();
  return self === null ? String(process.pid) : `pid=${self.pid} start=${self.startTicks} boot=${self.bootId}\n`;
}

/** A lock taken (its release), or the pid of the live process holding it. */
export type LockAttempt = { readonly release: () => Promise<void> } | { readonly holder: number };

/**
 * Take the lock file at `path` (its folder exists), or learn which live
 * process holds it. A stale lock (its owner has ended, or its content names
 * no one) is taken over. `fail` makes the error for a lock that cannot be
 * read, or that other processes keep taking over.
 */
export async function tryOwnerLock(path: string, fail: (message: string, cause?: unknown) => Error): Promise<LockAttempt> {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const taken = await createLock(path);
    if (taken !== null) return { release: releaser(path, taken) };
    const found = await readLock(path, fail);
    if (found === null) continue; // released meanwhile
    const owner = parseOwnerLock(found.text);
    if (owner !== null && !ownerHasEnded(owner, found.mtimeMs)) return { holder: owner.pid };
    await removeStaleLock(path, found, fail);
  }
  throw fail(`could not take the lock ${path}`);
}

/**
 * Take the lock file at `path` (its folder exists), waiting while a live
 * process holds it, up to `waitMs`; then `fail` says for how long `what`
 * has been held, and by whom.
 */
export async function waitForOwnerLock(path: string, waitMs: number, what: string, fail: (message: string, cause?: unknown) => Error): Promise<() => Promise<void>> {
  const deadline = Date.now() + waitMs;
  for (let wait = 2; ; wait = Math.min(wait * 2, 50)) {
    const attempt = await tryOwnerLock(path, fail);
    if ('release' in attempt) return attempt.release;
    if (Date.now() > deadline) throw fail(`${what} ${path} has been held by pid ${attempt.holder} for ${waitMs / 1000} s`);
    await sleep(wait);
  }
}

/**
 * Whether a lock's owner has certainly ended. A lock naming this process
 * is taken over: its holders release it when done, and take turns within
 * the process before they take it, so one found here was left behind (its
 * release failed), or was written by an earlier process that had this pid.
 */
function ownerHasEnded(owner: LockOwner, mtimeMs: number): boolean {
  if (owner.pid === process.pid) return true;
  return writerHasEnded(owner.identity ?? owner, mtimeMs);
}

/**
 * Create the lock whole or not at all: its content goes into a temporary
 * file that is then hard-linked to the lock's name, which fails with EEXIST
 * when a lock is there; a crash can leave the temporary file (removed by
 * temp-cleanup.ts) but never a torn lock. On a file system without hard
 * links, the lock is created exclusively and written in place (a crash
 * between the two leaves an empty lock: stale). Returns the lock's inode,
 * or null when a lock is there.
 */
async function createLock(path: string): Promise<bigint | null> {
  const content = ownerLockContent();
  const temp = join(dirname(path), tempFileName(basename(path)));
  await writeFile(temp, content, { mode: 0o644, flag: 'wx' });
  try {
    // The lock will be this very file: its inode tells it from a lock put in its place later.
    const { ino } = await lstat(temp, { bigint: true });
    await link(temp, path);
    return ino;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return null;
    if (!NO_HARD_LINKS.has(code)) throw error;
  } finally {
    await unlink(temp).catch(() => {});
  }
  let handle;
  try {
    handle = await open(path, 'wx', 0o644);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return null;
    throw error;
  }
  try {
    await handle.writeFile(content);
    return (await handle.stat({ bigint: true })).ino;
  } finally {
    await handle.close();
  }
}

/** link(2) errors that mean the file system has no hard links. */
const NO_HARD_LINKS = new Set<unknown>(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EMLINK']);

interface FoundLock {
  readonly text: string;
  readonly ino: bigint;
  readonly mtimeMs: number;
}

/** The lock as found: content (at most MAX_LOCK_BYTES + 1 bytes of it), inode and modification time; null when there is none. */
async function readLock(path: string, fail: (message: string, cause?: unknown) => Error): Promise<FoundLock | null> {
  const unreadable = (cause: unknown) => fail(`cannot read the lock ${path}: ${(cause as Error).message}`, cause);
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw unreadable(error);
  }
  try {
    const stats = await handle.stat({ bigint: true });
    if (!stats.isFile()) throw new Error('not a regular file');
    const buffer = Buffer.alloc(MAX_LOCK_BYTES + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return { text: buffer.toString('latin1', 0, bytesRead), ino: stats.ino, mtimeMs: Number(stats.mtimeMs) };
  } catch (error) {
    throw unreadable(error);
  } finally {
    await handle.close();
  }
}

/**
 * Remove the stale lock that was `found`, and only that one: another
 * process may have judged it stale too and already put its own lock in its
 * place. The lock is renamed aside first, then checked: if what was moved
 * is not the stale lock, it goes back (link: never over a lock taken in
 * that moment). Inode and content are both compared, since a file system
 * may hand the freed inode of the stale lock straight to the new one.
 */
async function removeStaleLock(path: string, found: FoundLock, fail: (message: string, cause?: unknown) => Error): Promise<void> {
  const aside = join(dirname(path), tempFileName(`${basename(path)}.stale`));
  try {
    await rename(path, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  try {
    const moved = await readLock(aside, fail);
    if (moved !== null && (moved.ino !== found.ino || moved.text !== found.text)) {
      await link(aside, path).catch(async (error: unknown) => {
        if (NO_HARD_LINKS.has((error as NodeJS.ErrnoException).code)) await rename(aside, path);
      });
    }
  } finally {
    await unlink(aside).catch(() => {});
  }
}

/** Release: remove the lock if it is still the one taken (not one taken over meanwhile). */
function releaser(path: string, ino: bigint): () => Promise<void> {
  return async () => {
    try {
      if ((await lstat(path, { bigint: true })).ino === ino) await unlink(path);
    } catch {
      // Already gone.
    }
  };
}
