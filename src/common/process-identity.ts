import { readFileSync } from 'node:fs';

/**
 * Who a process is, beyond its pid: pids are reused, so a file that names
 * only a pid (a build lock, a temporary file) can outlive its writer and be
 * taken for a live one's. Linux gives each process a start time (clock ticks
 * since boot, /proc/<pid>/stat field 22) that a later process with the same
 * pid cannot share, and each boot an id, so a start time from an earlier
 * boot is never compared with one from this boot.
 *
 * Where /proc cannot be read, nothing beyond the pid is known: callers then
 * judge by whether the pid is alive, as before.
 */
export interface ProcessIdentity {
  readonly pid: number;
  /** Start time in clock ticks since boot. */
  readonly startTicks: number;
  /** /proc/sys/kernel/random/boot_id, lower case. */
  readonly bootId: string;
}

/** Largest pid accepted from a file: what kill(2) takes. */
const MAX_PID = 0x7fffffff;
const BOOT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const START_TICKS = /^\d{1,15}$/;
/**
 * Clock ticks per second in /proc (USER_HZ): 100 on every architecture Node
 * runs on; Node has no sysconf(_SC_CLK_TCK) to ask.
 */
const TICKS_PER_SECOND = 100;

export function isValidPid(pid: number): boolean {
  return Number.isSafeInteger(pid) && pid > 0 && pid <= MAX_PID;
}

export function isValidBootId(text: string): boolean {
  return BOOT_ID.test(text);
}

let bootId: string | null | undefined;

/** This boot's id, or null where /proc does not give it. Read once: a process never sees two boots. */
export function currentBootId(): string | null {
  if (bootId === undefined) {
    try {
      const text = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim().toLowerCase();
      bootId = BOOT_ID.test(text) ? text : null;
    } catch {
      bootId = null;
    }
  }
  return bootId;
}

/** A process's start time in clock ticks since boot, or null when it does not exist or /proc does not say. */
export function processStartTicks(pid: number): number | null {
  if (!isValidPid(pid)) return null;
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so count fields from the last ')'.
  const close = stat.lastIndexOf(')');
  if (close < 0) return null;
  // Fields after comm start at field 3 (state); starttime is field 22.
  const field = stat.slice(close + 2).split(' ')[22 - 3];
  if (field === undefined || !START_TICKS.test(field)) return null;
  return Number(field);
}

let own: ProcessIdentity | null | undefined;

/** This process's identity, or null where /proc does not give it. */
export function ownIdentity(): ProcessIdentity | null {
  if (own === undefined) {
    const startTicks = processStartTicks(process.pid);
    const boot = currentBootId();
    own = startTicks === null || boot === null ? null : { pid: process.pid, startTicks, bootId: boot };
  }
  return own;
}

/** Whether a process with this pid exists (one of another user's counts). */
export function isPidAlive(pid: number): boolean {
  if (!isValidPid(pid)) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whether the process `claim` names has certainly ended: it ran in an
 * earlier boot, no process has its pid, or the one that has it started at
 * another time (the pid was reused). `bootId` may be a prefix of the boot
 * id (temporary file names carry a short one). False when that cannot be
 * told, for example where /proc is not readable: a live pid then counts.
 */
export function hasEnded(claim: { readonly pid: number; readonly startTicks: number; readonly bootId: string }): boolean {
  const boot = currentBootId();
  if (boot !== null && claim.bootId.length > 0 && !boot.startsWith(claim.bootId)) return true;
  if (!isPidAlive(claim.pid)) return true;
  if (boot === null) return false;
  const startTicks = processStartTicks(claim.pid);
  return startTicks !== null && startTicks !== claim.startTicks;
}

/**
 * Margin for comparing a process's start with a file's modification time,
 * ms: the start is derived from /proc/uptime (10 ms steps) and the clock
 * may have been adjusted a little since.
 */
const START_MARGIN_MS = 5_000;

/**
 * Whether the writer of a file that names only a pid (written by an older
 * version, or where /proc was not readable) has certainly ended: no process
 * has the pid, or the one that has it started after the file was last
 * modified, so it cannot have written it.
 */
export function hasEndedSince(pid: number, mtimeMs: number): boolean {
  if (!isPidAlive(pid)) return true;
  const started = processStartMs(pid);
  return started !== null && started > mtimeMs + START_MARGIN_MS;
}

/**
 * Whether the writer a file names (a lock, a temporary file) has certainly
 * ended: exactly, by start time and boot, where the file names them (hasEnded);
 * by a pid alone otherwise, against the file's last modification (hasEndedSince).
 */
export function writerHasEnded(
  writer: { readonly pid: number; readonly startTicks?: number | undefined; readonly bootId?: string | undefined },
  writtenAtMs: number,
): boolean {
  const { pid, startTicks, bootId } = writer;
  return startTicks === undefined || bootId === undefined ? hasEndedSince(pid, writtenAtMs) : hasEnded({ pid, startTicks, bootId });
}

/** When a process started, epoch ms, or null when /proc does not say. */
export function processStartMs(pid: number): number | null {
  const startTicks = processStartTicks(pid);
  if (startTicks === null) return null;
  let uptime: number;
  try {
    uptime = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
  } catch {
    return null;
  }
  if (!Number.isFinite(uptime) || uptime <= 0) return null;
  return Date.now() - (uptime - startTicks / TICKS_PER_SECOND) * 1000;
}
