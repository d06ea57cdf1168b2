import { readFile } from 'node:fs/promises';
import { writeFileAtomic } from '../common/atomic-file.js';
import type { DataDir } from '../common/data-dir.js';
import { isSnapshotId } from '../engine/snapshot-files.js';
import { oneFieldJson, readOneFieldJson } from '../common/one-field-json.js';

/**
 * Which snapshot the data directory's server last served
 * (`state/served-snapshot.json`), written durably before a snapshot is
 * served. A compaction's snapshot is served as soon as it is assembled and
 * its file written after, so a server killed in between comes back to
 * older snapshots only: served from one of them, clusters and scores would
 * go back, which only a correction may do. A start that cannot load the
 * snapshot named here (or one newer) builds before it serves.
 */
export type LastServed =
  /** Nothing recorded: a data directory from before this record, or one never served from. */
  | { readonly kind: 'none' }
  | { readonly kind: 'snapshot'; readonly snapshot: string }
  /** The record cannot be read or is not what `recordLastServed` writes: what was served is not known. */
  | { readonly kind: 'unreadable'; readonly reason: string };

export async function readLastServed(dir: DataDir): Promise<LastServed> {
  let text: string;
  try {
    text = await readFile(dir.servedSnapshot, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'none' };
    return { kind: 'unreadable', reason: (error as Error).message };
  }
  const record = readOneFieldJson(text, 'snapshot');
  if (!record.ok && record.reason === 'not JSON') return { kind: 'unreadable', reason: 'it is not JSON' };
  if (!record.ok || typeof record.value !== 'string' || !isSnapshotId(record.value)) {
    return { kind: 'unreadable', reason: 'it must hold {"snapshot": "<snapshot id>"}' };
  }
  return { kind: 'snapshot', snapshot: record.value };
}

/** Record, atomically and fsynced, that `snapshot` is served from now on. */
export async function recordLastServed(dir: DataDir, snapshot: string): Promise<void> {
  await writeFileAtomic(dir.servedSnapshot, oneFieldJson('snapshot', snapshot));
}
