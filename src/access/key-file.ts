import { chmod, mkdir, readFile, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { writeFileAtomic } from '../common/atomic-file.js';
import type { DataDir } from '../common/data-dir.js';
import { KeyFileError } from '../common/errors.js';
import { waitForOwnerLock } from '../common/owner-lock.js';
import { inTurn } from '../common/turns.js';
import { readKeyRecords, type KeyBackend, type KeyRecord } from './key-record.js';

/**
 * The key file (`<data-dir>/keys.json`, mode 0600) holds hashes, never keys.
 * The CLI edits it atomically; a running server polls it and sees created,
 * rotated and revoked keys within a second.
 */
interface KeyFile {
  readonly version: 1;
  readonly keys: KeyRecord[];
}

export const KEY_FILE_NAME = 'keys.json';
export const KEY_FILE_VERSION = 1;
/** The lock file beside the key file while a change is written (owner-lock.ts), and how long a change waits for it. */
const LOCK_SUFFIX = '.lock';
const LOCK_WAIT_MS = 10_000;

export function keyFilePath(dir: DataDir): string {
  return join(dir.root, KEY_FILE_NAME);
}

/** Read and validate the key file; a missing file is an empty store. */
export async function readKeyFile(path: string): Promise<KeyRecord[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new KeyFileError(`cannot read key file ${path}: ${(error as Error).message}`, { cause: error });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new KeyFileError(`key file ${path} is not valid JSON`, { cause: error });
  }
  return validateKeyFile(parsed, path).keys;
}

function validateKeyFile(value: unknown, path: string): KeyFile {
  const fail = (why: string) => new KeyFileError(`key file ${path}: ${why}`);
  if (typeof value !== 'object' || value === null) throw fail('not an object');
  const file = value as Record<string, unknown>;
  if (file.version !== KEY_FILE_VERSION) throw fail(`unsupported version ${JSON.stringify(file.version)} (this build reads ${KEY_FILE_VERSION})`);
  if (!Array.isArray(file.keys)) throw fail('"keys" is not an array');
  return { version: KEY_FILE_VERSION, keys: readKeyRecords(file.keys, fail) };
}

async function writeKeyFile(path: string, keys: readonly KeyRecord[]): Promise<void> {
  const file: KeyFile = { version: KEY_FILE_VERSION, keys: [...keys] };
  await writeFileAtomic(path, Buffer.from(JSON.stringify(file, null, 2) + '\n'), 0o600);
  // The mode given at creation is subject to the umask; make sure.
  await chmod(path, 0o600);
}

export class FileKeyBackend implements KeyBackend {
  readonly #path: string;

  constructor(path: string) {
    this.#path = path;
  }

  get description(): string {
    return this.#path;
  }

  read(): Promise<KeyRecord[]> {
    return readKeyFile(this.#path);
  }

  /**
   * Read, change and write the file as one step: in turn with this
   * process's other changes of it, and under its lock file against other
   * processes' (the CLI beside a server), so that no change is lost to
   * another made at the same time: a revoked key never comes back.
   */
  update<T>(change: (keys: KeyRecord[]) => { keys: KeyRecord[]; result: T }): Promise<T> {
    // By the file's absolute path: two spellings of one path take turns too (a lock naming this process is taken over).
    return inTurn(resolve(this.#path), async () => {
      await mkdir(dirname(this.#path), { recursive: true });
      const release = await waitForOwnerLock(`${this.#path}${LOCK_SUFFIX}`, LOCK_WAIT_MS, "the key file's lock", (message, cause) => new KeyFileError(message, { cause }));
      try {
        const { keys, result } = change(await readKeyFile(this.#path));
        await writeKeyFile(this.#path, keys);
        return result;
      } finally {
        await release();
      }
    });
  }

  version(): Promise<string> {
    return stat(this.#path).then(
      (s) => `${s.size}:${s.mtimeMs}:${s.ino}`,
      () => 'missing',
    );
  }
}
