import { readdir, readFile } from 'node:fs/promises';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';

/**
 * The console's built files (docs/console.md), read and compressed once by
 * the main thread and answered from memory by every serving thread at
 * /console/ (routes/console.ts).
 */
export interface ConsoleAsset {
  readonly type: string;
  readonly body: Uint8Array;
  readonly gzip: Uint8Array;
  readonly brotli: Uint8Array;
  /** Named after its content hash: cached for a year without asking again. */
  readonly immutable: boolean;
}

export interface ConsoleAssets {
  /** By path below /console/, e.g. `index.html`, `assets/index-1a2b3c.js`. */
  readonly files: Readonly<Record<string, ConsoleAsset>>;
}

/** Where `vite build` puts the console: dist/console beside the compiled service. */
export const CONSOLE_DIR = new URL('../../console/', import.meta.url);

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};

/**
 * Every console response: nothing from elsewhere, no inline script or
 * style, no framing, no referrer, no type sniffing.
 */
export const CONSOLE_SECURITY_HEADERS: readonly (readonly [string, string])[] = [
  [
    'Content-Security-Policy',
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  ],
  ['X-Content-Type-Options', 'nosniff'],
  ['Referrer-Policy', 'no-referrer'],
  ['X-Frame-Options', 'DENY'],
  ['Cross-Origin-Opener-Policy', 'same-origin'],
];

/** Read and compress the built console; null when it has not been built (the service then serves the API alone). */
export async function loadConsoleAssets(dir: URL | string = CONSOLE_DIR): Promise<ConsoleAssets | null> {
  const root = typeof dir === 'string' ? dir : fileURLToPath(dir);
  let paths: string[];
  try {
    paths = (await readdir(root, { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  const files: Record<string, ConsoleAsset> = {};
  for (const path of paths) {
    const type = TYPES[extname(path)];
    if (type === undefined) continue;
    const body = await readFile(path);
    const name = relative(root, path).split(sep).join('/');
    files[name] = {
      type,
      body,
      gzip: await promisify(gzip)(body, { level: 9 }),
      brotli: await promisify(brotliCompress)(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } }),
      immutable: name.startsWith('assets/'),
    };
  }
  if (files['index.html'] === undefined) return null;
  return { files };
}

/** Whether an Accept-Encoding header accepts `coding` (listed, and not with q=0). */
export function acceptsEncoding(header: string, coding: string): boolean {
  for (const part of header.toLowerCase().split(',')) {
    const [name, ...params] = part.split(';').map((p) => p.trim());
    if (name !== coding) continue;
    return !params.some((p) => /^q=0(\.0{0,3})?$/.test(p));
  }
  return false;
}
