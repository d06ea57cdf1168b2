/**
 * Every error the service raises on purpose carries a stable `code` (what
 * callers and tests key on) and a `name`; the message is for people and may
 * change. The HTTP edge maps codes to the spec's error responses in one place.
 */
export class UpiRiskError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UpiRiskError';
    this.code = code;
  }
}

/** A snapshot file that is truncated, corrupt, of an unknown version or inconsistent. */
export class SnapshotError extends UpiRiskError {
  constructor(code: SnapshotErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'SnapshotError';
  }
}

export type SnapshotErrorCode =
  | 'ERR_SNAPSHOT_TRUNCATED'
  | 'ERR_SNAPSHOT_CHECKSUM'
  | 'ERR_SNAPSHOT_VERSION'
  | 'ERR_SNAPSHOT_FORMAT'
  | 'ERR_SNAPSHOT_NOT_FOUND';

/** Evidence that cannot be accepted (a bad NDJSON line or file). */
export class EvidenceError extends UpiRiskError {
  constructor(code: 'ERR_EVIDENCE_INVALID' | 'ERR_EVIDENCE_FILE', message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'EvidenceError';
  }
}

/** Bad command-line arguments or configuration values. */
export class ConfigError extends UpiRiskError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_CONFIG', message, options);
    this.name = 'ConfigError';
  }
}
