import { extname } from 'node:path';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { Routes } from '../route-kit.js';
import { CONSOLE_SECURITY_HEADERS, acceptsEncoding, type ConsoleAsset, type ConsoleAssets } from '../console-assets.js';

/**
 * The console's files at /console/ (docs/console.md), answered from memory
 * (console-assets.ts). A path that is no file is a page of the single-page
 * app, so it gets index.html. The console's sign-in is an admin route
 * (POST /v1/admin/session, admin.ts).
 */
export function registerConsoleRoutes(routes: Routes, assets: ConsoleAssets): void {
  const index = assets.files['index.html']!;
  const redirectToConsole = (res: HttpResponse): void => {
    res.writeStatus('308 Permanent Redirect').writeHeader('Location', '/console/');
    for (const [name, value] of CONSOLE_SECURITY_HEADERS) res.writeHeader(name, value);
    res.end();
  };
  const consoleFile = (res: HttpResponse, req: HttpRequest): void => {
    const path = req.getUrl().slice('/console/'.length);
    // Own properties only: "constructor" is not a file.
    const asset = Object.hasOwn(assets.files, path) ? assets.files[path] : undefined;
    if (asset !== undefined) {
      answer(res, req, '200 OK', asset);
    } else if (path.startsWith('assets/') || extname(path) !== '') {
      // A missing file, not a page: an old bundle's chunk must not come back as HTML.
      res.writeStatus('404 Not Found').writeHeader('Content-Type', 'text/plain; charset=utf-8');
      for (const [name, value] of CONSOLE_SECURITY_HEADERS) res.writeHeader(name, value);
      res.end('not found');
    } else {
      answer(res, req, '200 OK', index);
    }
  };
  routes.get('/console', redirectToConsole);
  routes.get('/console/*', consoleFile);
}

function answer(res: HttpResponse, req: HttpRequest, status: string, asset: ConsoleAsset): void {
  const accepted = req.getHeader('accept-encoding');
  const encoding = acceptsEncoding(accepted, 'br') ? 'br' : acceptsEncoding(accepted, 'gzip') ? 'gzip' : null;
  res.writeStatus(status).writeHeader('Content-Type', asset.type);
  res.writeHeader('Cache-Control', asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
  res.writeHeader('Vary', 'Accept-Encoding');
  if (encoding !== null) res.writeHeader('Content-Encoding', encoding);
  for (const [name, value] of CONSOLE_SECURITY_HEADERS) res.writeHeader(name, value);
  res.end(encoding === 'br' ? asset.brotli : encoding === 'gzip' ? asset.gzip : asset.body);
}
