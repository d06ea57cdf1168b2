import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { DataDir } from '../common/data-dir.js';
import { AdminStateError } from '../common/errors.js';
import { AUDIT_ACTIONS, type AuditAction } from './audit-actions.js';

/** Who made a change. */
export interface AuditActor {
  /** The key that made the change (a console session acts as its key); null for the CLI. */
  readonly key_id: string | null;
  readonly name: string;
}

/** Changes made with `upi-risk keys` on the host. */
export const CLI_ACTOR: AuditActor = { key_id: null, name: 'cli' };

export interface AuditEntry {
  readonly actor: AuditActor;
  readonly action: AuditAction;
  /** The key changed (or signed in with). */
  readonly target: string;
  /** What changed, e.g. `{plan: {from, to}}`; no secrets. */
  readonly details: Readonly<Record<string, unknown>>;
}

export interface AuditRecord extends AuditEntry {
  readonly id: string;
  /** ISO 8601. */
  readonly at: string;
}

/**
 * The record of every change made to keys and console sessions: who (the
 * key that made it, or the CLI), what, when. Append-only; the console and
 * `GET /v1/admin/audit` show the newest first.
 */
export interface AuditLog {
  append(entry: AuditEntry, now?: Date): Promise<AuditRecord>;
  /** Up to `limit` records, newest first. */
  recent(limit: number): Promise<AuditRecord[]>;
  /** Whether any record of `action` on `target` was appended. */
  holds(action: AuditAction, target: string): Promise<boolean>;
}

export const MAX_AUDIT_LIMIT = 1000;

export function auditRecord(entry: AuditEntry, now: Date): AuditRecord {
  return { id: `aud_${randomBytes(8).toString('hex')}`, at: now.toISOString(), ...entry };
}

/** Check a stored audit record (a line of the file, a database row); throws what `fail` makes. */
export function readAuditRecord(value: unknown, fail: (why: string) => Error): AuditRecord {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw fail('not an object');
  const r = value as Record<string, unknown>;
  if (typeof r.id !== 'string' || !/^aud_[0-9a-f]{16}$/.test(r.id)) throw fail('id is not an audit record id');
  if (typeof r.at !== 'string' || Number.isNaN(Date.parse(r.at))) throw fail('at is not a timestamp');
  if (!(AUDIT_ACTIONS as readonly unknown[]).includes(r.action)) throw fail(`unknown action ${JSON.stringify(r.action)}`);
  if (typeof r.target !== 'string') throw fail('target is not a string');
  const actor = r.actor as Record<string, unknown> | null;
  if (typeof actor !== 'object' || actor === null || (actor.key_id !== null && typeof actor.key_id !== 'string') || typeof actor.name !== 'string') {
    throw fail('actor must be {key_id, name}');
  }
  if (typeof r.details !== 'object' || r.details === null || Array.isArray(r.details)) throw fail('details is not an object');
  return {
    id: r.id,
    at: r.at,
    actor: { key_id: actor.key_id as string | null, name: actor.name },
    action: r.action as AuditAction,
    target: r.target,
    details: r.details as Record<string, unknown>,
  };
}

export function auditLogPath(dir: DataDir): string {
  return join(dir.root, 'audit.ndjson');
}

/**
 * The audit log of a data directory: `audit.ndjson`, one record per line,
 * appended and fsynced before the change is reported done. A last line
 * without its newline is a write a crash cut short, and is skipped.
 */
export class FileAuditLog implements AuditLog {
  readonly #path: string;
  /** Appends one at a time, so lines never interleave. */
  #appending: Promise<unknown> = Promise.resolve();

  constructor(path: string) {
    this.#path = path;
  }

  append(entry: AuditEntry, now = new Date()): Promise<AuditRecord> {
    const record = auditRecord(entry, now);
    const write = this.#appending.then(async () => {
      await mkdir(dirname(this.#path), { recursive: true });
      const handle = await open(this.#path, 'a', 0o600);
      try {
        await handle.write(`${JSON.stringify(record)}\n`);
        await handle.sync();
      } finally {
        await handle.close();
      }
      return record;
    });
    this.#appending = write.catch(() => {});
    return write.catch((error: unknown) => {
      throw new AdminStateError(`cannot append to the audit log ${this.#path}: ${(error as Error).message}`, { cause: error });
    });
  }

  async recent(limit: number): Promise<AuditRecord[]> {
    const lines = await this.#lines();
    const out: AuditRecord[] = [];
    for (let i = lines.length - 1; i >= 0 && out.length < limit; i--) out.push(this.#record(lines, i));
    return out;
  }

  async holds(action: AuditAction, target: string): Promise<boolean> {
    const lines = await this.#lines();
    for (let i = lines.length - 1; i >= 0; i--) {
      const record = this.#record(lines, i);
      if (record.action === action && record.target === target) return true;
    }
    return false;
  }

  /** The file's whole lines, oldest first (none when there is no file). */
  async #lines(): Promise<string[]> {
    let text: string;
    try {
      text = await readFile(this.#path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw new AdminStateError(`cannot read the audit log ${this.#path}: ${(error as Error).message}`, { cause: error });
    }
    const lines = text.split('\n');
    // The piece after the last newline is empty, or a torn write.
    lines.pop();
    return lines;
  }

  #record(lines: readonly string[], i: number): AuditRecord {
    const fail = (why: string) => new AdminStateError(`audit log ${this.#path}, line ${i + 1}: ${why}`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(lines[i]!);
    } catch {
      throw fail('not JSON');
    }
    return readAuditRecord(parsed, fail);
  }
}
