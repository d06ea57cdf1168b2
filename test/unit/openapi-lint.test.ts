import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openApiDocument } from '../../src/api/openapi.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const REDOCLY = join(ROOT, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');
const CONFIG = join(ROOT, 'redocly.yaml');

interface LintReport {
  readonly totals: { readonly errors: number; readonly warnings: number };
  readonly problems: readonly { readonly ruleId: string; readonly severity: string; readonly message: string; readonly location: readonly { readonly pointer?: string }[] }[];
}

/** The CLI as a process, offline: no telemetry, no update notice. It exits 1 when it finds an error. */
function lint(file: string, cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_NOTIFICATIONS: 'true', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };
  return new Promise((done, fail) => {
    execFile(process.execPath, [REDOCLY, 'lint', `--config=${CONFIG}`, '--format=json', file], { cwd, env, timeout: 120_000, maxBuffer: 16 << 20 }, (error, stdout, stderr) => {
      if (error !== null && typeof error.code !== 'number') fail(new Error(`redocly did not run: ${error.message}`, { cause: error }));
      else done({ code: error === null ? 0 : (error.code as number), stdout, stderr });
    });
  });
}

test('the served OpenAPI document passes redocly lint (redocly.yaml) with no warning', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'upi-risk-openapi-lint-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  const file = join(dir, 'openapi.json');
  // As the server serves it (src/http/routes/operations.ts).
  await writeFile(file, JSON.stringify(openApiDocument(version)));

  const run = await lint(file, dir);
  let report: LintReport;
  try {
    report = JSON.parse(run.stdout) as LintReport;
  } catch {
    assert.fail(`redocly lint exited ${run.code} without a JSON report:\n${run.stdout}\n${run.stderr}`);
  }
  const problems = report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer ?? '?'}: ${p.message}`);
  assert.deepEqual(problems, [], `redocly lint: ${report.totals.errors} errors, ${report.totals.warnings} warnings`);
  assert.equal(run.code, 0, run.stderr);
});
