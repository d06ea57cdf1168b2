/**
 * CPU time a process has used, all its threads together, read from Linux's
 * /proc. Throughput on this machine depends on how the scheduler splits two
 * cores between the server and its load generator, and swings from run to
 * run; the CPU a server spends per request depends far less on that split,
 * so it shows what a request costs with less of the machine's mood in it.
 */
import { readFile } from 'node:fs/promises';
import { spawnSync } from 'node:child_process';

let ticksPerSecond: number | undefined;

/** Clock ticks per second of /proc's CPU counters (USER_HZ, 100 on common kernels). */
function userHz(): number {
  if (ticksPerSecond === undefined) {
    const probe = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
    const value = Number(probe.stdout?.trim());
    ticksPerSecond = Number.isInteger(value) && value > 0 ? value : 100;
  }
  return ticksPerSecond;
}

/**
 * User plus system CPU seconds of `pid` so far, or null where /proc is not
 * there (not Linux) or the process has gone.
 */
export async function processCpuSeconds(pid: number): Promise<number | null> {
  let stat: string;
  try {
    stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name, field 2, is in parentheses and may hold spaces: count fields after it.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return Number.isFinite(utime) && Number.isFinite(stime) ? (utime + stime) / userHz() : null;
}
