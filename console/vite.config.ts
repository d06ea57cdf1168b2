/**
 * Builds the console into dist/console, served at /console/ under a CSP of
 * `script-src 'self'; style-src 'self'`: every script and style is a file,
 * nothing is inlined into index.html.
 *
 *   vite build --config console/vite.config.ts
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    // No data: URLs and no inlined styles; the polyfill is not needed by the browsers that run the console.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
    sourcemap: false,
  },
});
