import { lstat, readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { TEMP_PREFIX, tempFileWriter } from './atomic-file.js';
import type { Logger } from './logger.js';
import { writerHasEnded } from './process-identity.js';

export interface TempCleanupResult {
  readonly files: number;
  readonly bytes: number;
}

/**
 * Remove the temporary files (atomic-file.ts, tempFileName) in `folders`
 * whose writer has certainly ended: a process killed while writing leaves
 * its file behind, and nothing else ever removes it. The rule needs no lock,
 * so it is safe beside any other process: a file is removed only when the
 * process its name names ran in an earlier boot, is gone, or has had its
 * pid reused (another start time; for a name with a pid only, a process
 * started after the file was last written). A live writer's file, a name
 * of another form, anything not a regular file, and anything that cannot be
 * judged (no /proc and a live pid) stay. Best effort: never throws; what
 * cannot be listed or removed stays for the next time. Logs what it
 * removed when it removed anything.
 */
export async function removeStaleTempFiles(folders: readonly string[], logger: Logger): Promise<TempCleanupResult> {
  let files = 0;
  let bytes = 0;
  for (const folder of folders) {
    let names: string[];
    try {
      names = await readdir(folder);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
        logger.warn({ folder, err: (error as Error).message }, 'could not look for temporary files left by ended writers');
      }
      continue;
    }
    for (const name of names) {
      if (!name.startsWith(TEMP_PREFIX)) continue;
      const writer = tempFileWriter(name);
      if (writer === null) continue;
      const path = join(folder, name);
      try {
        const stats = await lstat(path);
        if (!stats.isFile()) continue;
        if (!writerHasEnded(writer, stats.mtimeMs)) continue;
        await unlink(path);
        files++;
        bytes += stats.size;
      } catch (error) {
        // Gone meanwhile (another cleanup took it): nothing to do.
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
          logger.warn({ path, err: (error as Error).message }, 'could not remove a temporary file left by an ended writer');
        }
      }
    }
  }
  if (files > 0) logger.info({ files, bytes, folders }, 'removed temporary files left by writers that ended');
  return { files, bytes };
}
