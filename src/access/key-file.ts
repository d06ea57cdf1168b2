import { readFile, stat, chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../common/atomic-file.js';
import type { DataDir } from '../common/data-dir.js';
import { KeyFileError } from '../common/errors.js';
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

  async update<T>(change: (keys: KeyRecord[]) => { keys: KeyRecord[]; result: T }): Promise<T> {
    const { keys, result } = change(await readKeyFile(this.#path));
    await writeKeyFile(this.#path, keys);
    return result;
  }

  version(): Promise<string> {
    return stat(this.#path).then(
      (s) => `${s.size}:${s.mtimeMs}:${s.ino}`,
      () => 'missing',
    );
  }
}
