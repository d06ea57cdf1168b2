import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { GENERATED_SOURCES, REGENERATE_COMMAND } from '../../scripts/generate-client-sources.js';

for (const [path, generate] of Object.entries(GENERATED_SOURCES)) {
  test(`${path.slice(path.indexOf('packages/'))} is what the server's sources generate`, async () => {
    const expected = await generate();
    const actual = await readFile(path, 'utf8').catch(() => null);
    if (actual === expected) return;
    let same = 0;
    while (actual !== null && same < expected.length && expected[same] === actual[same]) same++;
    const line = expected.slice(0, same).split('\n').length;
    assert.fail(
      actual === null
        ? `${path} is missing: run \`${REGENERATE_COMMAND}\``
        : `${path} is out of date with the server's sources (first difference at line ${line}): run \`${REGENERATE_COMMAND}\``,
    );
  });
}
