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

  it('is documented: every operator code in docs/operations.md, every API code in docs/api.md', () => {
    const operations = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
    for (const code of Object.values(ErrorCode)) assert.ok(operations.includes(code), `docs/operations.md does not name ${code}`);
    const api = readFileSync(join(ROOT, 'docs', 'api.md'), 'utf8');
    for (const code of API_ERROR_CODES) assert.ok(api.includes(`\`${code}\``), `docs/api.md does not name ${code}`);
  });
});
