import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { request } from 'node:http';
import uWS from 'uWebSockets.js';
import { CONSOLE_DIR, acceptsEncoding, loadConsoleAssets } from '../../src/http/console-assets.js';
import { registerConsoleRoutes } from '../../src/http/routes/console.js';
import { listen } from '../../src/http/server.js';
import { tempDataDir } from '../helpers.js';

/** GET without decoding, so the encoding the server chose can be checked (fetch would undo it). */
function get(port: number, path: string, acceptEncoding = ''): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers: acceptEncoding === '' ? {} : { 'accept-encoding': acceptEncoding } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('the console is served from memory: compressed when accepted, cached by name, a page for any app path', async () => {
  const { root, cleanup } = await tempDataDir();
  const dir = join(root, 'console');
  await mkdir(join(dir, 'assets'), { recursive: true });
  const html = '<!doctype html><title>console</title><script type="module" src="/console/assets/index-abc123.js"></script>';
  const script = `console.log(${JSON.stringify('x'.repeat(5000))});`;
  await writeFile(join(dir, 'index.html'), html);
  await writeFile(join(dir, 'assets', 'index-abc123.js'), script);
  const assets = (await loadConsoleAssets(dir))!;
  const app = uWS.App();
  registerConsoleRoutes(app, assets);
  const listening = await listen(app, '127.0.0.1', 0);
  try {
    const page = await get(listening.port, '/console/', 'gzip, deflate, br');
    assert.equal(page.status, 200);
    assert.equal(page.headers['content-encoding'], 'br');
    assert.equal(brotliDecompressSync(page.body).toString(), html);
    assert.equal(page.headers['cache-control'], 'no-cache');
    assert.equal(page.headers['content-type'], 'text/html; charset=utf-8');
    const csp = String(page.headers['content-security-policy']);
    for (const directive of ["default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "object-src 'none'"]) assert.ok(csp.includes(directive), directive);
    assert.ok(!csp.includes('unsafe-inline'));
    assert.equal(page.headers['x-content-type-options'], 'nosniff');
    assert.equal(page.headers['referrer-policy'], 'no-referrer');
    assert.equal(page.headers['x-frame-options'], 'DENY');

    const js = await get(listening.port, '/console/assets/index-abc123.js', 'gzip');
    assert.equal(js.headers['content-encoding'], 'gzip');
    assert.equal(gunzipSync(js.body).toString(), script);
    assert.equal(js.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.equal(js.headers.vary, 'Accept-Encoding');

    const plain = await get(listening.port, '/console/assets/index-abc123.js');
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.equal(plain.body.toString(), script);

    // A page of the app (history routing) gets index.html; a missing file does not.
    const deep = await get(listening.port, '/console/clusters/MC-12');
    assert.equal(deep.status, 200);
    assert.equal(deep.body.toString(), html);
    assert.equal((await get(listening.port, '/console/assets/index-old999.js')).status, 404);
    assert.equal((await get(listening.port, '/console/favicon.ico')).status, 404);
    // Names of the object the files are kept in are not files.
    for (const path of ['constructor', '__proto__', 'toString']) assert.equal((await get(listening.port, `/console/${path}`)).body.toString(), html, path);
    const bare = await get(listening.port, '/console');
    assert.equal(bare.status, 308);
    assert.equal(bare.headers.location, '/console/');
  } finally {
    listening.close();
    (app as unknown as { close(): void }).close();
    await cleanup();
  }
});

test('an unbuilt console is no console', async () => {
  const { root, cleanup } = await tempDataDir();
  try {
    assert.equal(await loadConsoleAssets(join(root, 'nothing-here')), null);
    assert.ok(CONSOLE_DIR.pathname.endsWith('/dist/console/'));
  } finally {
    await cleanup();
  }
});

test('Accept-Encoding: listed codings are accepted unless q=0', () => {
  assert.equal(acceptsEncoding('gzip, br', 'br'), true);
  assert.equal(acceptsEncoding('GZIP;q=0.5', 'gzip'), true);
  assert.equal(acceptsEncoding('br;q=0, gzip', 'br'), false);
  assert.equal(acceptsEncoding('br;q=0.000', 'br'), false);
  assert.equal(acceptsEncoding('identity', 'gzip'), false);
  assert.equal(acceptsEncoding('', 'gzip'), false);
});
