/**
 * The memory a process may use: a size an operator gives (`serve
 * --max-memory 2G`), or the limit of the control group it runs in (a
 * container's memory limit), read from the kernel's files (cgroup v2's
 * memory.max, v1's memory.stat). Builds plan their memory under it
 * (service/build-memory.ts).
 */
import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join, posix } from 'node:path';
import { ConfigError } from './errors.js';

const UNITS: Readonly<Record<string, number>> = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 };

/** The largest size taken: 1 PiB. */
export const MAX_MEMORY_BYTES = 1024 ** 5;
/** The smallest: 64 MiB, less than any server needs. */
export const MIN_MEMORY_BYTES = 64 * 1024 ** 2;

/**
 * A size of memory: a whole number of bytes, or a number with a binary unit
 * K, M, G or T (1024-based; `KB`, `KiB` and lower case alike), such as
 * `1500M` or `2.5G`. Between MIN_MEMORY_BYTES and MAX_MEMORY_BYTES.
 */
export function parseMemorySize(name: string, text: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?$/i.exec(text.trim());
  if (match === null) throw new ConfigError(`--${name} must be a size such as 2G, 1500M or a number of bytes; got ${JSON.stringify(text)}`);
  const bytes = Math.floor(Number(match[1]) * UNITS[match[2]!.toLowerCase()]!);
  if (!Number.isSafeInteger(bytes) || bytes < MIN_MEMORY_BYTES || bytes > MAX_MEMORY_BYTES) {
    throw new ConfigError(`--${name} must be from 64M to 1P; got ${JSON.stringify(text)}`);
  }
  return bytes;
}

/** Where the kernel's files are read: `/` on a real system; a test's folder otherwise. */
export interface CgroupFiles {
  readonly root: string;
}

/**
 * The memory limit of the control group this process is in, in bytes, the
 * smallest of its own and its ancestors'; null when there is none below the
 * machine's memory, or it cannot be read (no cgroup file system, another
 * kernel). cgroup v2 (memory.max up the tree) is read first, then v1
 * (memory.stat's hierarchical_memory_limit).
 */
export function cgroupMemoryLimit(files: CgroupFiles = { root: '/' }, machineBytes = totalmem()): number | null {
  const group = memoryCgroupOf(files);
  if (group === null) return null;
  const limit = group.version === 2 ? cgroupV2Limit(files, group) : cgroupV1Limit(files, group);
  return limit === null || limit >= machineBytes ? null : limit;
}

/** The memory control group of this process: which version, its folder, and the mount it is under. */
export interface MemoryCgroup {
  readonly version: 1 | 2;
  readonly folder: string;
  readonly mountPoint: string;
}

/**
 * This process's memory control group (cgroup v2 where the memory
 * controller is there, else v1's memory hierarchy); null when neither is
 * mounted or the files cannot be read.
 */
export function memoryCgroupOf(files: CgroupFiles = { root: '/' }): MemoryCgroup | null {
  const membership = readText(files, '/proc/self/cgroup');
  const mounts = readText(files, '/proc/self/mountinfo');
  if (membership === null || mounts === null) return null;
  const lines = membership.split('\n');
  const v2 = lines.find((l) => l.startsWith('0::'));
  if (v2 !== undefined) {
    const found = folderOf(mountsOf(mounts, 'cgroup2'), v2.slice(3));
    if (found !== null && readText(files, posix.join(found.mount.mountPoint, 'cgroup.controllers'))?.split(/\s+/).includes('memory') === true) {
      return { version: 2, folder: found.folder, mountPoint: found.mount.mountPoint };
    }
  }
  const v1 = lines.find((l) => l.split(':')[1]?.split(',').includes('memory') === true);
  if (v1 === undefined) return null;
  const found = folderOf(mountsOf(mounts, 'cgroup', 'memory'), v1.slice(v1.indexOf(':', v1.indexOf(':') + 1) + 1));
  return found === null ? null : { version: 1, folder: found.folder, mountPoint: found.mount.mountPoint };
}

interface CgroupMount {
  /** The cgroup path mounted there (mountinfo's root field). */
  readonly root: string;
  readonly mountPoint: string;
}

/** The mounts of a file system type (`cgroup2`, or `cgroup` with `option` among its super options). */
function mountsOf(mounts: string, type: string, option?: string): CgroupMount[] {
  const found: CgroupMount[] = [];
  for (const line of mounts.split('\n')) {
    // id parent major:minor root mount-point options [optional fields...] - type source super-options
    const [before, after] = line.split(' - ');
    if (before === undefined || after === undefined) continue;
    const fields = before.split(' ');
    const [fsType, , superOptions = ''] = after.split(' ');
    if (fsType !== type || fields.length < 5) continue;
    if (option !== undefined && !superOptions.split(',').includes(option)) continue;
    found.push({ root: unescapeMountPath(fields[3]!), mountPoint: unescapeMountPath(fields[4]!) });
  }
  return found;
}

/** The folder of cgroup `path` under one of `mounts`, or null when none holds it. */
function folderOf(mounts: readonly CgroupMount[], path: string): { readonly mount: CgroupMount; readonly folder: string } | null {
  for (const mount of mounts) {
    const relative = posix.relative(mount.root, path);
    if (relative.startsWith('..')) continue;
    return { mount, folder: posix.join(mount.mountPoint, relative) };
  }
  return null;
}

/** The smallest memory.max of the group and its ancestors up to the mount: the one that binds. */
function cgroupV2Limit(files: CgroupFiles, group: MemoryCgroup): number | null {
  let smallest: number | null = null;
  for (let folder = group.folder; ; folder = posix.dirname(folder)) {
    const text = readText(files, posix.join(folder, 'memory.max'))?.trim();
    if (text !== undefined && /^\d+$/.test(text)) smallest = Math.min(smallest ?? Infinity, Number(text));
    if (folder === group.mountPoint || folder === '/') break;
  }
  return smallest;
}

/** The group's limit as the kernel enforces it, its ancestors' included (memory.stat's hierarchical_memory_limit). */
function cgroupV1Limit(files: CgroupFiles, group: MemoryCgroup): number | null {
  const stat = readText(files, posix.join(group.folder, 'memory.stat'));
  const hierarchical = stat === null ? undefined : /^hierarchical_memory_limit (\d+)$/m.exec(stat)?.[1];
  const own = readText(files, posix.join(group.folder, 'memory.limit_in_bytes'))?.trim();
  const text = hierarchical ?? own;
  return text !== undefined && /^\d+$/.test(text) ? Number(text) : null;
}

/** mountinfo escapes space, tab, newline and backslash as octal. */
function unescapeMountPath(text: string): string {
  return text.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

function readText(files: CgroupFiles, path: string): string | null {
  try {
    return readFileSync(join(files.root, path), 'utf8');
  } catch {
    return null;
  }
}
