/**
 * The mirror's directory: its last verified state as `manifest.json` (the
 * signed manifest as served) and `mirror-<version>.bin` (the entry set as a
 * full mirror file). Each is written to a temporary file, flushed and
 * renamed into place, the entry file first, the directory flushed after
 * each rename, and older entry files are removed last, as far as they can
 * be: a crash at any point leaves a manifest beside the file it names.
 * node:fs is imported when a directory is first used, so the package still
 * loads (and compiles without Node's types) where there is none.
 */
import { MirrorStorageError } from './errors.js';
import type { MirrorManifest } from './mirror-format.js';
import { readManifest } from './mirror-trust.js';

/** The part of node:fs/promises used here. */
export interface NodeFiles {
  mkdir(path: string, options: { recursive: true }): Promise<unknown>;
  readFile(path: string): Promise<Uint8Array>;
  readdir(path: string): Promise<string[]>;
  open(path: string, flags: 'w' | 'r'): Promise<FileHandle>;
  rename(from: string, to: string): Promise<void>;
  rm(path: string, options: { force: true }): Promise<void>;
}

export interface FileHandle {
  writeFile(data: Uint8Array | string): Promise<void>;
  sync(): Promise<void>;
  close(): Promise<void>;
}

/** Held in a variable so that neither TypeScript nor a bundler for another platform resolves it. */
const NODE_FS_MODULE: string = 'node:fs/promises';
const MANIFEST_FILE = 'manifest.json';
const ENTRY_FILE = /^mirror-(\d+)\.bin$/;
/** What opening or flushing a directory fails with where the platform cannot (Windows): its renames need no flush there. */
const NO_DIRECTORY_SYNC = new Set(['EISDIR', 'EPERM', 'EACCES', 'EINVAL', 'ENOTSUP', 'EBADF']);

let nodeFiles: Promise<NodeFiles> | undefined;

/** A stored manifest and the entry file it names, as read: still to be checked. */
export type StoredState =
  | { readonly manifest: MirrorManifest; readonly file: Uint8Array }
  | {
      readonly manifest: MirrorManifest;
      /** The entry file could not be read; `fileError` says why. */
      readonly file: null;
      readonly fileError: MirrorStorageError;
      /**
       * Whether it was an I/O error, which may pass (worth reading again),
       * rather than a missing file: a stored state that does not check out.
       */
      readonly transient: boolean;
    };

export class MirrorDirectory {
  readonly path: string;
  readonly #files: () => Promise<NodeFiles>;

  /** `files` is node:fs/promises, loaded when first needed; tests pass a recorder of it. */
  constructor(path: string, files: () => Promise<NodeFiles> = nodeFilesModule) {
    this.path = path.replace(/[\\/]+$/, '');
    this.#files = files;
  }

  /**
   * The state stored here, unchecked but for the manifest's shape; null
   * when none is. Throws MirrorStorageError when the manifest cannot be
   * read, MirrorFileError when it is not one.
   */
  async read(): Promise<StoredState | null> {
    const fs = await this.#files();
    let text: string;
    try {
      text = new TextDecoder().decode(await fs.readFile(this.#at(MANIFEST_FILE)));
    } catch (cause) {
      if (isMissing(cause)) return null;
      throw new MirrorStorageError(`cannot read ${this.#at(MANIFEST_FILE)}`, { cause });
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = null;
    }
    const manifest = readManifest(parsed);
    const entryFile = this.#at(entryFileName(manifest.version));
    try {
      return { manifest, file: await fs.readFile(entryFile) };
    } catch (cause) {
      // The manifest still tells which version was held: no older one may be taken after it.
      const fileError = new MirrorStorageError(`cannot read ${entryFile}, the entry file of the stored manifest`, { cause });
      return { manifest, file: null, fileError, transient: !isMissing(cause) };
    }
  }

  /**
   * Store a verified state in place of the one stored; throws
   * MirrorStorageError, leaving the stored one whole. Once the new
   * manifest is in place the state is stored: an older entry file that
   * cannot be removed is left for the next write to remove.
   */
  async write(manifest: MirrorManifest, fullFile: Uint8Array): Promise<void> {
    const fs = await this.#files();
    const entryFile = entryFileName(manifest.version);
    try {
      await fs.mkdir(this.path, { recursive: true });
      await this.#replace(fs, entryFile, fullFile);
      // The entry file's name is on disk before the manifest that names it.
      await this.#syncDirectory(fs);
      await this.#replace(fs, MANIFEST_FILE, JSON.stringify(manifest));
      await this.#syncDirectory(fs);
    } catch (cause) {
      throw new MirrorStorageError(`cannot store mirror version ${manifest.version} in ${this.path}`, { cause });
    }
    const names = await fs.readdir(this.path).catch(() => []);
    for (const name of names) {
      if (ENTRY_FILE.test(name) && name !== entryFile) await fs.rm(this.#at(name), { force: true }).catch(() => {});
    }
  }

  /** Flush the directory, so that the renames in it survive a crash; skipped where a directory cannot be opened or flushed (Windows). */
  async #syncDirectory(fs: NodeFiles): Promise<void> {
    let handle: FileHandle;
    try {
      handle = await fs.open(this.path, 'r');
    } catch (error) {
      if (noDirectorySync(error)) return;
      throw error;
    }
    try {
      await handle.sync();
    } catch (error) {
      if (!noDirectorySync(error)) throw error;
    } finally {
      await handle.close();
    }
  }

  /** Write `name` whole or not at all: a flushed temporary file renamed over it. */
  async #replace(fs: NodeFiles, name: string, data: Uint8Array | string): Promise<void> {
    const temporary = this.#at(`.${name}.${Math.random().toString(36).slice(2)}.tmp`);
    try {
      const handle = await fs.open(temporary, 'w');
      try {
        await handle.writeFile(data);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await fs.rename(temporary, this.#at(name));
    } catch (error) {
      await fs.rm(temporary, { force: true }).catch(() => {});
      throw error;
    }
  }

  #at(name: string): string {
    return `${this.path}/${name}`;
  }
}

function entryFileName(version: number): string {
  return `mirror-${version}.bin`;
}

function nodeFilesModule(): Promise<NodeFiles> {
  nodeFiles ??= (import(NODE_FS_MODULE) as Promise<NodeFiles>).catch((cause: unknown) => {
    nodeFiles = undefined;
    throw new MirrorStorageError('the mirror keeps its state in a directory through node:fs, which this platform lacks', { cause });
  });
  return nodeFiles;
}

function errorCode(error: unknown): unknown {
  return error !== null && typeof error === 'object' ? (error as { code?: unknown }).code : undefined;
}

function isMissing(error: unknown): boolean {
  return errorCode(error) === 'ENOENT';
}

function noDirectorySync(error: unknown): boolean {
  const code = errorCode(error);
  return typeof code === 'string' && NO_DIRECTORY_SYNC.has(code);
}
