import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, rename, unlink, stat, type FileHandle } from 'node:fs/promises';
import { join, basename } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { syncDirectory, tempFileName, writeAllAt } from '../common/atomic-file.js';
import type { DataDir } from '../common/data-dir.js';
import { ErrorCode, EvidenceError } from '../common/errors.js';
import { LineCheck, type LineError } from './lines.js';
import { evidenceLine, type EvidenceRecord } from './record.js';

/**
 * The evidence folder: one immutable NDJSON file per accepted input file,
 * named `<ingested-at ms, 13 digits>-<random>.ndjson` so that name order is
 * ingestion order (the build relies on it: the first occurrence of an
 * evidence_id wins) and the newest name tells when data last arrived.
 *
 * Ingestion is all-or-nothing per input file: a file with any invalid line
 * is refused whole, every bad line is reported with its line number, and
 * the other files of the same command are still applied.
 */
export const EVIDENCE_SUFFIX = '.ndjson';
const NAME_PATTERN = /^(\d{13})-[0-9a-f]{8}\.ndjson$/;


export interface FileIngestResult {
  readonly file: string;
  readonly accepted: boolean;
  /** Valid evidence lines in the file (all were stored when accepted). */
  readonly validLines: number;
  readonly invalidLines: number;
  /** Up to MAX_REPORTED_ERRORS of the invalid lines. */
  readonly errors: readonly LineError[];
  /** Name of the stored evidence file, when accepted with at least one line. */
  readonly storedAs: string | null;
}

/** Ingest one NDJSON file into the store. Never applies a file partially. */
export async function ingestFile(dir: DataDir, file: string, now: () => number = Date.now): Promise<FileIngestResult> {
  return ingestFrom(dir, file, async () => {
    try {
      const input = createReadStream(file, { encoding: 'utf8' });
      await new Promise<void>((resolve, reject) => {
        input.once('open', () => resolve());
        input.once('error', reject);
      });
      return input;
    } catch (error) {
      throw new EvidenceError(ErrorCode.EVIDENCE_FILE, `cannot read ${file}: ${(error as Error).message}`, { cause: error });
    }
  }, now);
}

/** Ingest NDJSON held in memory (an HTTP request's body) as ingestFile ingests a file; `label` names it in errors. */
export function ingestBytes(dir: DataDir, bytes: Uint8Array, label: string, now: () => number = Date.now): Promise<FileIngestResult> {
  return ingestFrom(dir, label, async () => Readable.from([Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')]), now);
}

async function ingestFrom(dir: DataDir, file: string, openInput: () => Promise<Readable>, now: () => number): Promise<FileIngestResult> {
  const output = await NewEvidenceFile.open(dir);
  const check = new LineCheck(file);
  try {
    let pending: string[] = [];
    let pendingLength = 0;
    const flush = async () => {
      if (pending.length === 0) return;
      await output.write(pending.join(''));
      pending = [];
      pendingLength = 0;
    };
    for await (const lines of check.lines(await openInput())) {
      // Once a file is known bad nothing more is written; its lines are still checked, to report every one.
      if (check.invalidLines > 0) continue;
      for (const { text } of lines) {
        pending.push(text, '\n');
        pendingLength += text.length + 1;
      }
      if (pendingLength >= 1 << 20) await flush();
    }
    const { validLines, invalidLines, errors } = check;
    if (invalidLines > 0 || validLines === 0) {
      return { file, accepted: invalidLines === 0, validLines, invalidLines, errors, storedAs: null };
    }
    await flush();
    const name = await output.store(now());
    return { file, accepted: true, validLines, invalidLines, errors, storedAs: name };
  } finally {
    await output.discard();
  }
}

/**
 * Records already checked against the ingestion contract (the fleet
 * builder's mirror of the store's log, checked as it is read), gathered as
 * the bytes of one evidence file for storeCheckedEvidence: each line is
 * encoded as it is added, so a batch of a hundred thousand holds buffers,
 * not objects (held objects cost more in garbage collection than the
 * checks did; bench/MEASUREMENTS.md, "Fleet start: the download and the
 * mirror").
 */
export class EvidenceBatch {
  readonly #chunks: Buffer[] = [];
  #chunk = Buffer.allocUnsafe(0);
  #used = 0;
  #records = 0;

  get records(): number {
    return this.#records;
  }

  add(record: EvidenceRecord): void {
    const line = evidenceLine(record);
    // UTF-8 takes at most 3 bytes per UTF-16 unit, and the newline one.
    const most = line.length * 3 + 1;
    if (this.#chunk.length - this.#used < most) this.#next(most);
    this.#used += this.#chunk.write(line, this.#used);
    this.#chunk[this.#used++] = NEWLINE;
    this.#records++;
  }

  /** The file's bytes. */
  bytes(): Buffer[] {
    return [...this.#chunks, this.#chunk.subarray(0, this.#used)];
  }

  #next(most: number): void {
    if (this.#used > 0) this.#chunks.push(this.#chunk.subarray(0, this.#used));
    this.#chunk = Buffer.allocUnsafe(Math.max(CHUNK_BYTES, most));
    this.#used = 0;
  }
}

const NEWLINE = 0x0a;
/** Encoded lines are gathered in buffers of this size, written together with one call. */
const CHUNK_BYTES = 1 << 20;

/**
 * Store a batch of checked records as one evidence file, as an ingest
 * stores an accepted file (the same names, flushes and renames) but
 * without parsing and checking every line again. Returns the stored name.
 */
export async function storeCheckedEvidence(dir: DataDir, batch: EvidenceBatch, now: () => number = Date.now): Promise<string> {
  if (batch.records === 0) throw new RangeError('storeCheckedEvidence needs at least one record');
  const output = await NewEvidenceFile.open(dir);
  try {
    await output.write(batch.bytes());
    return await output.store(now());
  } finally {
    await output.discard();
  }
}

/**
 * An evidence file being written: a temporary file in the evidence folder
 * until `store` flushes it to disk, gives it the next name and flushes the
 * folder, so a crash leaves the whole file or none of it.
 */
class NewEvidenceFile {
  readonly #dir: DataDir;
  readonly #temp: string;
  readonly #output: FileHandle;
  #stored = false;

  private constructor(dir: DataDir, temp: string, output: FileHandle) {
    this.#dir = dir;
    this.#temp = temp;
    this.#output = output;
  }

  static async open(dir: DataDir): Promise<NewEvidenceFile> {
    await mkdir(dir.evidence, { recursive: true });
    const temp = join(dir.evidence, tempFileName('ingest'));
    return new NewEvidenceFile(dir, temp, await open(temp, 'w', 0o644));
  }

  async write(data: string | readonly Buffer[]): Promise<void> {
    if (typeof data === 'string') {
      await this.#output.write(data);
      return;
    }
    await writeAllAt(this.#output, data, 0);
  }

  /** Flush, name and rename it; returns its name. */
  async store(at: number): Promise<string> {
    await this.#output.sync();
    await this.#output.close();
    const name = await freeEvidenceName(this.#dir, at);
    await rename(this.#temp, join(this.#dir.evidence, name));
    this.#stored = true;
    await syncDirectory(this.#dir.evidence);
    return name;
  }

  /** Close it and remove it unless stored. */
  async discard(): Promise<void> {
    await this.#output.close().catch(() => {});
    if (!this.#stored) await unlink(this.#temp).catch(() => {});
  }
}

async function freeEvidenceName(dir: DataDir, at: number): Promise<string> {
  // The timestamp must not go backwards relative to stored files, or name order would not be ingestion order.
  const newest = (await listEvidenceFiles(dir)).at(-1);
  // Strictly after the newest: two files of one millisecond would sort by their random part.
  const stamp = newest === undefined ? at : Math.max(at, evidenceFileTime(newest) + 1);
  return `${String(stamp).padStart(13, '0')}-${randomBytes(4).toString('hex')}${EVIDENCE_SUFFIX}`;
}

/** Stored evidence file names in ingestion order. */
export async function listEvidenceFiles(dir: DataDir): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir.evidence);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return names.filter((name) => NAME_PATTERN.test(name)).sort();
}

/** When a stored evidence file was ingested (epoch ms), from its name. */
export function evidenceFileTime(name: string): number {
  const match = NAME_PATTERN.exec(basename(name));
  return match === null ? 0 : Number(match[1]);
}

export interface StoredFile {
  readonly name: string;
  readonly path: string;
  readonly size: number;
  /** Last modification, ms: with the size, how a build tells a file it has read from one put in its place. */
  readonly mtimeMs: number;
}

/** Stored evidence files with their sizes, in ingestion order. */
export async function statEvidenceFiles(dir: DataDir): Promise<StoredFile[]> {
  const names = await listEvidenceFiles(dir);
  return Promise.all(
    names.map(async (name) => {
      const path = join(dir.evidence, name);
      const { size, mtimeMs } = await stat(path);
      return { name, path, size, mtimeMs };
    }),
  );
}
