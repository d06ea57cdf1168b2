/**
 * Fails when a tracked file is larger than 2 MiB: a core dump, a data set or
 * a build output committed by mistake is carried by every clone for ever.
 * Run by `npm test`. A file that must be larger goes in ALLOWED with the
 * reason beside it.
 */
import { execFileSync } from 'node:child_process';
import { lstatSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const MAX_TRACKED_BYTES = 2 * 1024 * 1024;

/** Tracked paths allowed over the limit, each with its reason. None today. */
const ALLOWED: ReadonlyMap<string, string> = new Map<string, string>([]);

export interface OversizedFile {
  readonly path: string;
  readonly bytes: number;
}

/** Tracked files (index and work tree) over `limit` bytes, outside ALLOWED, largest first. */
export function oversizedFiles(root: string, limit = MAX_TRACKED_BYTES): OversizedFile[] {
  const listing = execFileSync('git', ['ls-files', '-z', '--cached'], { cwd: root, maxBuffer: 64 * 1024 * 1024 });
  const found: OversizedFile[] = [];
  for (const path of listing.toString('utf8').split('\0')) {
    if (path === '' || ALLOWED.has(path)) continue;
    let bytes: number;
    try {
      const stat = lstatSync(join(root, path));
      if (!stat.isFile()) continue;
      bytes = stat.size;
    } catch {
      // Deleted in the work tree but still in the index: the staged blob counts.
      bytes = stagedSize(root, path);
    }
    if (bytes > limit) found.push({ path, bytes });
  }
  return found.sort((a, b) => b.bytes - a.bytes);
}

function stagedSize(root: string, path: string): number {
  try {
    return Number(execFileSync('git', ['cat-file', '-s', `:${path}`], { cwd: root }).toString().trim());
  } catch {
    return 0;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const found = oversizedFiles(ROOT);
  for (const { path, bytes } of found) {
    process.stderr.write(`check-file-sizes: ${path} is ${bytes} bytes, over the ${MAX_TRACKED_BYTES}-byte limit for tracked files\n`);
  }
  if (found.length > 0) process.exitCode = 1;
  else process.stdout.write(`check-file-sizes: no tracked file over ${MAX_TRACKED_BYTES} bytes\n`);
}
