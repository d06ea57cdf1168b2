import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCode } from '../../src/common/errors.js';
import { ERROR_CODES as API_ERROR_CODES } from '../../src/api/schemas.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

describe('the one list of error codes', () => {
  it('holds distinct ERR_ codes', () => {
    const codes = Object.values(ErrorCode);
    assert.equal(new Set(codes).size, codes.length);
    for (const code of codes) assert.match(code, /^ERR_[A-Z_]+$/);
  });

  it('is the only place an operator error code is written out', () => {
    const errorsModule = join(ROOT, 'src', 'common', 'errors.ts');
    const literal = /['"`]ERR_[A-Z_]+['"`]/;
    const offenders = [...sourceFiles(join(ROOT, 'src')), ...sourceFiles(join(ROOT, 'scripts')), ...sourceFiles(join(ROOT, 'bench'))]
      .filter((file) => file !== errorsModule)
      .filter((file) => literal.test(readFileSync(file, 'utf8')));
    assert.deepEqual(offenders, []);
  });

  it('is documented: every operator code has a row in the error codes of docs/operations.md', () => {
    const operations = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
    const table = operations.slice(operations.indexOf('## Error codes'));
    for (const code of Object.values(ErrorCode)) {
      assert.ok(table.includes(`| \`${code}\` |`), `docs/operations.md has no row for ${code} under "Error codes"`);
    }
  });

  it('holds every code docs/operations.md names (a family such as ERR_SNAPSHOT_* names at least one)', () => {
    const codes: readonly string[] = Object.values(ErrorCode);
    const operations = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
    for (const [named] of operations.matchAll(/ERR_[A-Z]+(?:_[A-Z]+)*(?:_\*)?/g)) {
      const known = named.endsWith('*') ? codes.some((code) => code.startsWith(named.slice(0, -1))) : codes.includes(named);
      assert.ok(known, `docs/operations.md names ${named}, which src/common/errors.ts does not hold`);
    }
  });

  it('is documented: every API code has a row, with its status, in the error table of docs/api.md', () => {
    const api = readFileSync(join(ROOT, 'docs', 'api.md'), 'utf8');
    const table = api.slice(api.indexOf('## Errors'));
    for (const code of API_ERROR_CODES) assert.match(table, new RegExp(`^\\| [45]\\d\\d \\| \`${code}\` \\|`, 'm'), `docs/api.md has no row for ${code} under "Errors"`);
  });

  it('gives each API code one status', () => {
    const api = readFileSync(join(ROOT, 'docs', 'api.md'), 'utf8');
    const rows = [...api.slice(api.indexOf('## Errors')).matchAll(/^\| ([45]\d\d) \| `([a-z_]+)` \|/gm)].map((m) => [m[2], m[1]] as const);
    assert.equal(new Set(rows.map(([code]) => code)).size, rows.length, 'a code in two rows');
    assert.deepEqual(rows.map(([code]) => code).sort(), [...API_ERROR_CODES].sort());
  });
});
