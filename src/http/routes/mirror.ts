import type { HttpRequest } from 'uWebSockets.js';
import { HttpError, badRequest, notFound } from '../../api/http-error.js';
import { diffPath, fullPath, type MirrorPublication } from '../../mirror/mirror-publication.js';
import type { Answer, Exchange } from '../exchange.js';
import { ROUTE } from '../request-stats.js';
import type { ApiDependencies, RouteKit } from '../route-kit.js';
import { noInput } from './request-input.js';

/** A file of a version never changes: callers and caches may keep it for a year. */
// private: the files answer a keyed request; a shared cache must not hand them to callers without a key or quota.
const IMMUTABLE = 'private, max-age=31536000, immutable';
/** Retry-After while the first version is being made. */
const FIRST_VERSION_RETRY_SECONDS = 5;

interface FileInput {
  readonly from: string;
  readonly to: string;
  readonly acceptEncoding: string;
  readonly ifNoneMatch: string;
}

/**
 * The local mirror (docs/api.md, "The mirror"): its public key, the signed
 * manifest of its newest version, and that version's full file and diffs,
 * from what the main thread published (MirrorKeeper, or a follower's
 * StoreMirror).
 */
export function registerMirrorRoutes(kit: RouteKit, deps: ApiDependencies): void {
  const { routes, keyed, send, sendTyped } = kit;
  const published = (): MirrorPublication => {
    const mirror = deps.mirror;
    if (mirror === undefined || mirror.unavailable !== null) throw new HttpError(503, 'service_unavailable', mirror?.unavailable ?? 'this server does not serve the mirror');
    if (mirror.current === null) {
      throw new HttpError(503, 'service_unavailable', 'no mirror version is served yet: the first is being made (in a fleet, by the active builder, once its data directory holds a signing key)', {
        retryAfter: FIRST_VERSION_RETRY_SECONDS,
      });
    }
    return mirror.current;
  };
  const publicKey: Answer<null> = (x) => send(x, 200, published().publicKey);
  const manifest: Answer<null> = (x) => send(x, 200, published().manifest, ['Cache-Control', 'no-cache']);
  const file = (x: Exchange, path: string, input: FileInput): void => {
    const bodies = published().files.get(path);
    if (bodies === undefined) throw notFound(`mirror file ${path} is not kept: fetch the manifest for the newest version and its diffs`);
    const encoding = chooseEncoding(input.acceptEncoding, bodies.gzip !== null && bodies.br !== null);
    const etag = encoding === 'identity' ? bodies.etag : `${bodies.etag.slice(0, -1)}.${encoding}"`;
    const headers = ['ETag', etag, 'Cache-Control', IMMUTABLE, 'Vary', 'Accept-Encoding', ...(encoding === 'identity' ? [] : ['Content-Encoding', encoding])];
    if (input.ifNoneMatch !== '' && input.ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)) {
      sendTyped(x, 304, 'application/octet-stream', new Uint8Array(0), headers);
      return;
    }
    sendTyped(x, 200, 'application/octet-stream', encoding === 'br' ? bodies.br! : encoding === 'gzip' ? bodies.gzip! : bodies.identity, headers);
  };
  const full: Answer<FileInput> = (x, input) => file(x, fullPath(versionNumber(input.to)), input);
  const diff: Answer<FileInput> = (x, input) => file(x, diffPath(versionNumber(input.from), versionNumber(input.to)), input);

  routes.get('/v1/mirror/public-key', keyed(ROUTE.mirror, 'screen', noInput, publicKey));
  routes.get('/v1/mirror/manifest', keyed(ROUTE.mirror, 'screen', noInput, manifest));
  routes.get('/v1/mirror/full/:version', keyed(ROUTE.mirror, 'screen', (req) => fileInput(req, '', req.getParameter(0) ?? ''), full));
  routes.get('/v1/mirror/diff/:from/:to', keyed(ROUTE.mirror, 'screen', (req) => fileInput(req, req.getParameter(0) ?? '', req.getParameter(1) ?? ''), diff));
}

function fileInput(req: HttpRequest, from: string, to: string): FileInput {
  return { from, to, acceptEncoding: req.getHeader('accept-encoding'), ifNoneMatch: req.getHeader('if-none-match') };
}

/** A version in a path: a whole number from 1, written without leading zeros. */
function versionNumber(text: string): number {
  if (!/^[1-9][0-9]{0,14}$/.test(text)) throw badRequest('a mirror version is a whole number from 1');
  return Number(text);
}

/** Brotli when the caller takes it, else gzip, else the file as it is (q=0 refuses a coding); as it is until the file is compressed. */
function chooseEncoding(header: string, compressed: boolean): 'br' | 'gzip' | 'identity' {
  if (!compressed) return 'identity';
  const accepted = new Set<string>();
  for (const part of header.toLowerCase().split(',')) {
    const [coding, ...params] = part.trim().split(';');
    const refused = params.some((p) => /^\s*q\s*=\s*0(\.0*)?\s*$/.test(p));
    if (coding !== undefined && coding !== '' && !refused) accepted.add(coding.trim());
  }
  return accepted.has('br') ? 'br' : accepted.has('gzip') ? 'gzip' : 'identity';
}
