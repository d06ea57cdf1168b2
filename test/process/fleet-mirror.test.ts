import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { UpiRiskClient, UpiRiskMirror } from '@upi-risk/client';
import { confidenceBand } from '../../src/api/advice.js';
import { appendToLog, withTestSchema } from '../store-fixtures.js';
import { evidence, tempDataDir, until } from '../helpers.js';
import { lastLine, runCli, startBuilder, startServer, type BuilderProcess, type RunningServer } from '../server-process.js';
import { mirrorKeyPath } from '../../src/mirror/signing-key.js';

const UPIS = Array.from({ length: 300 }, (_, i) => `fleet.payee${i}@${['ybl', 'okaxis', 'paytm'][i % 3]}`);

/**
 * The fleet's mirror: the active builder signs, every follower serves the
 * same bytes (a follower started later included, which builds the version
 * from the store's base and diffs), a client synced from one follower
 * agrees with another's answers, and a standby builder holding the same
 * key takes over the numbering when the active one is killed.
 */
test('fleet mirror: followers serve what the active builder signed, byte for byte, and a standby goes on numbering', { timeout: 300_000 }, async () => {
  await withTestSchema(async (location) => {
    const t = await tempDataDir();
    const store = ['--store', location.url, '--store-schema', location.schema];
    assert.equal((await runCli(['migrate', ...store])).code, 0);
    await appendToLog(
      location,
      UPIS.map((upi, i) => evidence(upi, `https://fraud.example/${i % 13}`, { evidence_id: `f${i}`, risk_category: ['mule', 'scam', 'phishing'][i % 3] })),
    );
    const apiKey = lastLine((await runCli(['keys', 'create', ...store, '--name', 'bank'])).stdout);
    const builderDir = (n: number) => join(t.root, `builder-${n}`);
    const created = await runCli(['mirror-key', 'create', '--data-dir', builderDir(0)]);
    assert.equal(created.code, 0, created.stderr);
    const publicKey = lastLine(created.stdout);
    // The standby gets a copy of the same key file, as docs/deployment.md asks.
    await mkdir(join(builderDir(1), 'mirror'), { recursive: true });
    await copyFile(mirrorKeyPath(join(builderDir(0), 'mirror')), mirrorKeyPath(join(builderDir(1), 'mirror')));
    const builderArgs = (n: number) => [...store, '--data-dir', builderDir(n), '--poll-ms', '100', '--threads', '1', '--mirror-seconds', '1'];
    const builders: BuilderProcess[] = [startBuilder(builderArgs(0))];
    const followers: RunningServer[] = [];
    const follower = (n: number) => startServer(join(t.root, `follower-${n}`), { args: [...store, '--threads', '1'] });
    const get = (server: RunningServer, path: string) => fetch(`${server.base}${path}`, { headers: { authorization: `Bearer ${apiKey}` } });
    const manifestText = async (server: RunningServer): Promise<string | null> => {
      const r = await get(server, '/v1/mirror/manifest');
      return r.status === 200 ? r.text() : null;
    };
    const versionOf = (text: string | null) => (text === null ? 0 : (JSON.parse(text) as { version: number }).version);
    try {
      followers.push(await follower(0));
      const a = followers[0]!;
      await until('the first version served', 60_000, async () => (await manifestText(a)) !== null);
      assert.deepEqual(await (await get(a, '/v1/mirror/public-key')).json(), { public_key: publicKey });

      const mirror = new UpiRiskMirror({ baseUrl: a.base, apiKey, publicKey });
      const first = await mirror.sync();
      assert.equal(first.applied, 'full');

      // Two more versions before the second follower starts: it builds the newest from what the store keeps.
      for (const [i, upi] of ['later.one@ybl', 'later.two@okaxis'].entries()) {
        const before = versionOf(await manifestText(a));
        await appendToLog(location, [evidence(upi, `https://later.example/${i}`, { evidence_id: `later${i}` })]);
        await until(`a version holding ${upi}`, 60_000, async () => versionOf(await manifestText(a)) > before && (await mirror.sync()).version > before && mirror.check(upi).match);
      }
      followers.push(await follower(1));
      const b = followers[1]!;
      let same = '';
      await until('both followers serve the same version', 60_000, async () => {
        const [ta, tb] = [await manifestText(a), await manifestText(b)];
        same = ta ?? '';
        return ta !== null && ta === tb;
      });
      const manifest = JSON.parse(same) as { version: number; full: { url: string }; diffs: { url: string }[] };
      for (const url of [manifest.full.url, ...manifest.diffs.map((d) => d.url)]) {
        const [fa, fb] = await Promise.all([get(a, url), get(b, url)]);
        assert.equal(fa.status, 200, url);
        assert.equal(fa.headers.get('etag'), fb.headers.get('etag'), url);
        assert.deepEqual(new Uint8Array(await fa.arrayBuffer()), new Uint8Array(await fb.arrayBuffer()), `${url}: the same bytes from both followers`);
      }

      // A mirror synced from one follower agrees with the other's answers for every flagged VPA and some never seen.
      await until('the client at that version', 30_000, async () => (await mirror.sync()).version >= manifest.version);
      const client = new UpiRiskClient({ baseUrl: b.base, apiKey });
      const asked = [...UPIS, 'later.one@ybl', 'later.two@okaxis', ...Array.from({ length: 100 }, (_, i) => `never.seen${i}@ybl`)];
      for (let i = 0; i < asked.length; i += 100) {
        for (const { verdict } of (await client.verifyBatch(asked.slice(i, i + 100))).results) {
          const found = mirror.check(verdict.upi);
          if (verdict.status === 'CLEARED') assert.equal(found.match, false, verdict.upi);
          else assert.deepEqual(found, { match: true, risk_category: verdict.risk_category, confidence_band: confidenceBand('FLAGGED', verdict.confidence) }, verdict.upi);
        }
      }

      // The active builder killed: the standby, with the same key, goes on from the store's newest number.
      builders.push(startBuilder(builderArgs(1)));
      const killed = builders[0]!;
      killed.child.kill('SIGKILL');
      await once(killed.child, 'exit');
      await until('the standby active', 30_000, () => builders[1]!.active());
      const beforeFailover = versionOf(await manifestText(b));
      await appendToLog(location, [evidence('after.failover@paytm', 'https://failover.example', { evidence_id: 'failover' })]);
      await until('a version after the failover, from the other follower', 90_000, async () => {
        if (versionOf(await manifestText(b)) <= beforeFailover) return false;
        const synced = new UpiRiskMirror({ baseUrl: b.base, apiKey, publicKey });
        await synced.sync();
        return synced.check('after.failover@paytm').match;
      });
      // The client that held a version before the failover moves on too, with the signature checked as ever.
      await until('the first client past the failover', 30_000, async () => (await mirror.sync()).version > beforeFailover && mirror.check('after.failover@paytm').match);
      assert.equal(mirror.check('later.one@ybl').match, true);
    } finally {
      for (const server of followers) await server.stop();
      await Promise.all(builders.map((builder) => builder.stop()));
      await t.cleanup();
    }
  });
});
