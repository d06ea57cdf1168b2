/**
 * The mirror's directory: its last verified state as `manifest.json` (the
 * signed manifest as served) and `mirror-<version>.bin` (the entry set as a
 * full mirror file). Each is written to a temporary file, flushed and
 * renamed into place, the entry file first, and older entry files are
 * removed last: a crash at any point leaves a manifest beside the file it
 * names. node:fs is imported when a directory is first used, so the package
 * still loads (and compiles without Node's types) where there is none.
 */
import { MirrorStorageError } from './errors.js';
import type { MirrorManifest } from './mirror-format.js';
import { readManifest } from './mirror-trust.js';

/** The part of node:fs/promises used here. */
interface NodeFiles {
  mkdir(path: string, options: { recursive: true }): Promise<unknown>;
  readFile(path: string): Promise<Uint8Array>;
  readdir(path: string): Promise<string[]>;
  open(path: string, flags: 'w'): Promise<FileHandle>;
  rename(from: string, to: string): Promise<void>;
  rm(path: string, options: { force: true }): Promise<void>;
}

interface FileHandle {
  writeFile(data: Uint8Array | string): Promise<void>;
  sync(): Promise<void>;
  close(): Promise<void>;
}

/** Held in a variable so that neither TypeScript nor a bundler for another platform resolves it. */
const NODE_FS_MODULE: string = 'node:fs/promises';
const MANIFEST_FILE = 'manifest.json';
const ENTRY_FILE = /^mirror-(\d+)\.bin$/;

let nodeFiles: Promise<NodeFiles> | undefined;

export interface StoredState {
  readonly manifest: MirrorManifest;
  /** The entry file the manifest names, as read: still to be checked; null when it could not be read (`fileError` says why). */
  readonly file: Uint8Array | null;
  readonly fileError?: MirrorStorageError;
}

export class MirrorDirectory {
  readonly path: string;

  constructor(path: string) {
    this.path = path.replace(/[\\/]+$/, '');
  }

  /**
   * The state stored here, unchecked but for the manifest's shape; null
   * when none is. Throws MirrorStorageError when the directory cannot be
   * read or the manifest's entry file is missing, MirrorFileError when the
   * manifest is not one.
   */
  async read(): Promise<StoredState | null> {
    const fs = await files();
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
      return { manifest, file: null, fileError: new MirrorStorageError(`cannot read ${entryFile}, the entry file of the stored manifest`, { cause }) };
    }
  }

  /** Store a verified state in place of the one stored; throws MirrorStorageError, leaving the stored one whole. */
  async write(manifest: MirrorManifest, fullFile: Uint8Array): Promise<void> {
    const fs = await files();
    try {
      await fs.mkdir(this.path, { recursive: true });
      const entryFile = entryFileName(manifest.version);
      await this.#replace(fs, entryFile, fullFile);
      await this.#replace(fs, MANIFEST_FILE, JSON.stringify(manifest));
      for (const name of await fs.readdir(this.path)) {
        if (ENTRY_FILE.test(name) && name !== entryFile) await fs.rm(this.#at(name), { force: true });
      }
    } catch (cause) {
      throw new MirrorStorageError(`cannot store mirror version ${manifest.version} in ${this.path}`, { cause });
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

function files(): Promise<NodeFiles> {
  nodeFiles ??= (import(NODE_FS_MODULE) as Promise<NodeFiles>).catch((cause: unknown) => {
    nodeFiles = undefined;
    throw new MirrorStorageError('the mirror keeps its state in a directory through node:fs, which this platform lacks', { cause });
  });
  return nodeFiles;
}

function isMissing(error: unknown): boolean {
  return error !== null && typeof error === 'object' && (error as { code?: unknown }).code === 'ENOENT';
}
