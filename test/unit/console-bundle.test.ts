import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

// The console as Vite built it (`npm test` builds it after tsc): served at
// /console/ under `script-src 'self'; style-src 'self'`, first load under 300 KB.
const CONSOLE = fileURLToPath(new URL('../../console/', import.meta.url));
const FIRST_LOAD_LIMIT = 300 * 1024;

function indexHtml(): string {
  const path = join(CONSOLE, 'index.html');
  assert.ok(existsSync(path), `${path} is missing: build the console first (vite build --config console/vite.config.ts)`);
  return readFileSync(path, 'utf8');
}

/** Files index.html loads: its scripts, stylesheets and module preloads under /console/. */
function firstLoadFiles(html: string): string[] {
  const references = [...html.matchAll(/<(?:script|link)\b[^>]*?\b(?:src|href)="\/console\/([^"]+)"/g)].map((match) => match[1]!);
  return [...new Set(references)];
}

test('the first load (index.html and what it references) is under 300 KB gzip-compressed', () => {
  const html = indexHtml();
  const files = firstLoadFiles(html);
  assert.ok(files.some((file) => file.endsWith('.js')), `no entry script in ${html}`);
  assert.ok(files.some((file) => file.endsWith('.css')), `no stylesheet in ${html}`);
  let total = gzipSync(html).length;
  for (const file of files) total += gzipSync(readFileSync(join(CONSOLE, file))).length;
  assert.ok(total < FIRST_LOAD_LIMIT, `first load ${total} bytes gzip-compressed`);
});

test('Cytoscape is a chunk of its own, not part of the first load', () => {
  const firstLoad = firstLoadFiles(indexHtml());
  // Cytoscape's bundle carries its version as a string literal.
  const { version } = JSON.parse(readFileSync(new URL('../../../node_modules/cytoscape/package.json', import.meta.url), 'utf8')) as { version: string };
  const literal = new RegExp(`[\`'"]${version.replaceAll('.', '\\.')}[\`'"]`);
  const holdsCytoscape = (file: string) => literal.test(readFileSync(join(CONSOLE, file), 'utf8'));
  const chunks = readdirSync(join(CONSOLE, 'assets'))
    .filter((name) => name.endsWith('.js'))
    .map((name) => `assets/${name}`);
  assert.ok(
    chunks.some((file) => !firstLoad.includes(file) && holdsCytoscape(file)),
    `no lazy chunk holds Cytoscape ${version}: ${chunks.join(', ')}`,
  );
  for (const file of firstLoad.filter((name) => name.endsWith('.js'))) assert.equal(holdsCytoscape(file), false, `${file} bundles Cytoscape`);
});

test('index.html has no inline script or style that the CSP would block', () => {
  const html = indexHtml();
  for (const [, tag = '', body = ''] of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)) {
    assert.match(tag, /\bsrc=/, `a script without src: <script${tag}>`);
    assert.equal(body.trim(), '', `inline script content: ${body.slice(0, 80)}`);
  }
  assert.doesNotMatch(html, /<style\b/i, 'an inline <style> element');
  assert.doesNotMatch(html, /\sstyle\s*=/i, 'a style= attribute');
  assert.doesNotMatch(html, /\son[a-z]+\s*=/i, 'an inline event handler attribute');
});
