/**
 * Every error the service raises on purpose, in one list. Each carries a
 * stable `code` (what operators, scripts and tests key on) and a `name`; the
 * message is for people and may change. docs/operations.md documents each
 * code; the spec's HTTP error codes (`bad_request`, ...) are a separate list
 * in src/api/, since they are the API's, not the operator's.
 *
 * No code is written as a string literal anywhere else: raise the class, or
 * compare `error.code` with `ErrorCode.X`.
 */
export const ErrorCode = {
  /** Bad command-line arguments or configuration values. */
  CONFIG: 'ERR_CONFIG',
  /** A snapshot file ends before its header or body does. */
  SNAPSHOT_TRUNCATED: 'ERR_SNAPSHOT_TRUNCATED',
  /** A snapshot body does not match its CRC-32. */
  SNAPSHOT_CHECKSUM: 'ERR_SNAPSHOT_CHECKSUM',
  /** A snapshot of a format version this build does not read. */
  SNAPSHOT_VERSION: 'ERR_SNAPSHOT_VERSION',
  /** A snapshot that is not one, or whose content is inconsistent. */
  SNAPSHOT_FORMAT: 'ERR_SNAPSHOT_FORMAT',
  /** No snapshot file where one was expected. */
  SNAPSHOT_NOT_FOUND: 'ERR_SNAPSHOT_NOT_FOUND',
  /** An evidence line or file that breaks the ingestion contract. */
  EVIDENCE_INVALID: 'ERR_EVIDENCE_INVALID',
  /** An evidence file that cannot be read or stored. */
  EVIDENCE_FILE: 'ERR_EVIDENCE_FILE',
  /** The key file cannot be read, or its content is invalid. */
  KEY_FILE: 'ERR_KEY_FILE',
  /** The key store (Redis) refused or kept changing under an update. */
  KEY_STORE: 'ERR_KEY_STORE',
  /** Redis cannot be reached for a command that needs it. */
  REDIS: 'ERR_REDIS',
  /** The cluster id state file is unusable. */
  CLUSTER_STATE: 'ERR_CLUSTER_STATE',
  /** Another live process holds the data directory's build lock. */
  BUILD_LOCKED: 'ERR_BUILD_LOCKED',
  /** Another live `serve` holds the data directory (state/serve.lock). */
  DATA_DIR_IN_USE: 'ERR_DATA_DIR_IN_USE',
  /** The server cannot listen on its address. */
  LISTEN: 'ERR_LISTEN',
  /** A serving thread exited while asked something. */
  THREAD: 'ERR_THREAD',
  /** Serving threads kept failing at start, so the server gave up. */
  THREADS_FAILING: 'ERR_THREADS_FAILING',
  /** Demo data cannot be written where asked. */
  DEMO_DATA_WRITE: 'ERR_DEMO_DATA_WRITE',
  /** The PostgreSQL store cannot be reached, or refused a statement. */
  STORE: 'ERR_STORE',
  /** The store's schema is missing, or newer than this release knows: run (or upgrade) `upi-risk migrate`. */
  STORE_SCHEMA: 'ERR_STORE_SCHEMA',
  /** A row of the store breaks its contract (an evidence item, a snapshot publication): written by something other than this service. */
  STORE_DATA: 'ERR_STORE_DATA',
  /** The console's records in the data directory (audit log, key usage) cannot be read, or are not what this service writes. */
  ADMIN_STATE: 'ERR_ADMIN_STATE',
  /** The record of the data version positions handed out (state/data-version-positions.json) cannot be read or is not what this service writes. */
  POSITION_STATE: 'ERR_POSITION_STATE',
  /** The corrections journal (state/corrections.ndjson) cannot be read or written, or holds a line this service does not write. */
  CORRECTION_JOURNAL: 'ERR_CORRECTION_JOURNAL',
  /** A clearance asked for a VPA that has one in force (409 `conflict` in the admin API). */
  CLEARANCE_CONFLICT: 'ERR_CLEARANCE_CONFLICT',
  /** The disputes and reports journal of a data directory (state/disputes.ndjson) cannot be read or written, or holds a line this service did not write. */
  DISPUTE_STATE: 'ERR_DISPUTE_STATE',
  /** The mirror's signing key (DIR/mirror/signing-key.pem) cannot be read, is not an Ed25519 private key, or exists where a new one was asked for. */
  MIRROR_KEY: 'ERR_MIRROR_KEY',
  /** The mirror's record of the last version it made (DIR/mirror/last-version.json) cannot be read or written, or is not what this service writes. */
  MIRROR_STATE: 'ERR_MIRROR_STATE',
  /** The record of the data versions served (DIR/history/versions.bin) cannot be read or written, or is not what this service writes. */
  HISTORY: 'ERR_HISTORY',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** The base of every error below; `code` is one of ErrorCode. */
export class UpiRiskError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UpiRiskError';
    this.code = code;
  }
}

export type SnapshotErrorCode =
  | typeof ErrorCode.SNAPSHOT_TRUNCATED
  | typeof ErrorCode.SNAPSHOT_CHECKSUM
  | typeof ErrorCode.SNAPSHOT_VERSION
  | typeof ErrorCode.SNAPSHOT_FORMAT
  | typeof ErrorCode.SNAPSHOT_NOT_FOUND;

/** A snapshot file that is truncated, corrupt, of an unknown version or inconsistent. */
export class SnapshotError extends UpiRiskError {
  declare readonly code: SnapshotErrorCode;

  constructor(code: SnapshotErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'SnapshotError';
  }
}

export function isSnapshotErrorCode(code: unknown): code is SnapshotErrorCode {
  return (
    code === ErrorCode.SNAPSHOT_TRUNCATED ||
    code === ErrorCode.SNAPSHOT_CHECKSUM ||
    code === ErrorCode.SNAPSHOT_VERSION ||
    code === ErrorCode.SNAPSHOT_FORMAT ||
    code === ErrorCode.SNAPSHOT_NOT_FOUND
  );
}

/** Evidence that cannot be accepted (a bad NDJSON line or file). */
export class EvidenceError extends UpiRiskError {
  constructor(code: typeof ErrorCode.EVIDENCE_INVALID | typeof ErrorCode.EVIDENCE_FILE, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'EvidenceError';
  }
}

/** Bad command-line arguments or configuration values. */
export class ConfigError extends UpiRiskError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.CONFIG, message, options);
    this.name = 'ConfigError';
  }
}

/** A key change naming a key that does not exist (the CLI's usual configuration error; 404 in the admin API). */
export class UnknownKeyError extends ConfigError {
  readonly keyId: string;
  constructor(keyId: string) {
    super(`no key with id ${JSON.stringify(keyId)}`);
    this.name = 'UnknownKeyError';
    this.keyId = keyId;
  }
}

/** A key file, or a key record in Redis, that cannot be read or is invalid. */
export class KeyFileError extends UpiRiskError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.KEY_FILE, message, options);
    this.name = 'KeyFileError';
  }
}

/** A key store that could not apply an update. */
export class KeyStoreError extends UpiRiskError {
  constructor(message: string) {
    super(ErrorCode.KEY_STORE, message);
    this.name = 'KeyStoreError';
  }
}

/** An unusable cluster id state file. */
export class ClusterStateError extends UpiRiskError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.CLUSTER_STATE, message, options);
    this.name = 'ClusterStateError';
  }
}

/** Another live process holds the build lock. */
export class BuildLockedError extends UpiRiskError {
  /** The pid of the live build that holds the lock; absent when the lock could not be read or taken. */
  readonly holder: number | undefined;

  constructor(message: string, options?: { cause?: unknown; holder?: number }) {
    super(ErrorCode.BUILD_LOCKED, message, options);
    this.name = 'BuildLockedError';
    this.holder = options?.holder;
  }
}

/** Another live `serve` holds the data directory: two would write its snapshots, journals and positions. */
export class DataDirInUseError extends UpiRiskError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(ErrorCode.DATA_DIR_IN_USE, message, options);
    this.name = 'DataDirInUseError';
  }
}

/** Serving threads that exited, failed to listen or kept failing. */
export class ServingError extends UpiRiskError {
  constructor(code: typeof ErrorCode.LISTEN | typeof ErrorCode.THREAD | typeof ErrorCode.THREADS_FAILING, message: string) {
    super(code, message);
    this.name = 'ServingError';
  }
}

/** An outside service (Redis) or file target the command needs is not there. */
export class UnavailableError extends UpiRiskError {
  constructor(code: typeof ErrorCode.REDIS | typeof ErrorCode.DEMO_DATA_WRITE, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'UnavailableError';
  }
}

/** The PostgreSQL store (fleet mode) is unreachable, refused a statement, or holds a schema this release cannot use. */
export class StoreError extends UpiRiskError {
  constructor(code: typeof ErrorCode.STORE | typeof ErrorCode.STORE_SCHEMA | typeof ErrorCode.STORE_DATA, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'StoreError';
  }
}

/** The audit log or key usage file of a data directory is unreadable or invalid. */
export class AdminStateError extends UpiRiskError {
  constructor(message: string, options?: ErrorOptions) {
    super(ErrorCode.ADMIN_STATE, message, options);
    this.name = 'AdminStateError';
  }
}

/** The data directory's record of data version positions is unreadable or invalid: serving could repeat a version. */
export class PositionStateError extends UpiRiskError {
  constructor(message: string, options?: ErrorOptions) {
    super(ErrorCode.POSITION_STATE, message, options);
    this.name = 'PositionStateError';
  }
}

/** The record of the data versions served is unreadable, unwritable or not what this service writes: versions are not resolved, serving goes on. */
export class HistoryError extends UpiRiskError {
  constructor(message: string, options?: ErrorOptions) {
    super(ErrorCode.HISTORY, message, options);
    this.name = 'HistoryError';
  }
}

/** The corrections journal is unreadable, unwritable, or holds a line that is not a correction this service writes. */
export class CorrectionJournalError extends UpiRiskError {
  constructor(message: string, options?: ErrorOptions) {
    super(ErrorCode.CORRECTION_JOURNAL, message, options);
    this.name = 'CorrectionJournalError';
  }
}

/** A clearance asked for a VPA that has one in force: one at a time per VPA. */
export class ClearanceConflictError extends UpiRiskError {
  /** The clearance in force. */
  readonly clearanceId: string;
  constructor(upi: string, clearanceId: string) {
    super(ErrorCode.CLEARANCE_CONFLICT, `${upi} has a clearance in force (${clearanceId}); end it before clearing the VPA again`);
    this.name = 'ClearanceConflictError';
    this.clearanceId = clearanceId;
  }
}

/** The data directory's journal of disputes and reports is unreadable, unwritable or holds a line this service did not write. */
export class DisputeStateError extends UpiRiskError {
  constructor(message: string, options?: ErrorOptions) {
    super(ErrorCode.DISPUTE_STATE, message, options);
    this.name = 'DisputeStateError';
  }
}

/** The message of anything thrown, for a log line or an error of ours that wraps it: a non-Error is written as a string. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
