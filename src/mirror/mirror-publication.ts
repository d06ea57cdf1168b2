/**
 * One mirror version as the serving threads serve it (routes/mirror.ts):
 * the signed manifest's text, and every file it names, in the three
 * encodings a caller may ask for once compressed. The bodies are in shared memory, one copy
 * for every serving thread.
 */
export interface MirrorPublication {
  readonly version: number;
  /** GET /v1/mirror/manifest's body. */
  readonly manifest: string;
  /** GET /v1/mirror/public-key's body. */
  readonly publicKey: string;
  /** By path below /v1/mirror/: `full/<version>`, `diff/<from>/<version>`. */
  readonly files: ReadonlyMap<string, MirrorFileBodies>;
}

export interface MirrorFileBodies {
  /** The file's ETag, the same for each encoding but for its suffix. */
  readonly etag: string;
  readonly identity: Uint8Array;
  /** Null until compressed, moments after the version is served: the identity is served meanwhile. */
  readonly gzip: Uint8Array | null;
  readonly br: Uint8Array | null;
}

/** The path of a full file below /v1/mirror/. */
export const fullPath = (version: number): string => `full/${version}`;
/** The path of a diff file below /v1/mirror/. */
export const diffPath = (from: number, to: number): string => `diff/${from}/${to}`;
