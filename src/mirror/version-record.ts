import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../common/atomic-file.js';
import { ErrorCode, UpiRiskError } from '../common/errors.js';
import type { MirrorPublication } from './mirror-publication.js';

/**
 * Where the mirror's versions are recorded before they are served, so that
 * a version number never names two entry sets: DIR/mirror in the embedded
 * mode (MirrorVersionFile), the store in a fleet (fleet/builder-mirror.ts).
 */
export interface MirrorVersionRecord {
  /** The last version recorded, 0 for none: the next is one past it. */
  last(): Promise<number>;
  /** Record a version before it is served; when this throws, it is not served. */
  record(publication: MirrorPublication): Promise<void>;
}

const STATE_FILE = 'last-version.json';

/** The embedded mode's record: `{"version": N}` in DIR/mirror/last-version.json, written atomically. */
export class MirrorVersionFile implements MirrorVersionRecord {
  readonly #dir: string;

  constructor(mirrorDir: string) {
    this.#dir = mirrorDir;
  }

  /** A record that cannot be read is refused (ERR_MIRROR_STATE): numbering from 0 again would name old versions anew. */
  async last(): Promise<number> {
    const path = join(this.#dir, STATE_FILE);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw new UpiRiskError(ErrorCode.MIRROR_STATE, `cannot read ${path}: ${(error as Error).message}`, { cause: error });
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = null;
    }
    const version = (value as { version?: unknown } | null)?.version;
    if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 0) {
      throw new UpiRiskError(ErrorCode.MIRROR_STATE, `${path} is not {"version": <whole number>}: restore it, or set it past every version callers may hold`);
    }
    return version;
  }

  async record(publication: MirrorPublication): Promise<void> {
    try {
      await writeFileAtomic(join(this.#dir, STATE_FILE), Buffer.from(`${JSON.stringify({ version: publication.version })}\n`));
    } catch (error) {
      throw new UpiRiskError(ErrorCode.MIRROR_STATE, `cannot record mirror version ${publication.version} in ${this.#dir}: ${(error as Error).message}`, { cause: error });
    }
  }
}
