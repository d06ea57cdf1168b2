import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import {
  DEFAULT_END,
  MAX_GANG_SIZE,
  MIN_AGGREGATOR_SIZE,
  MIN_GANG_SIZE,
  SAMPLE_EVIDENCE,
  WINDOW_MS,
  generateEvidence,
  generateEvidenceChunks,
  writeDemoData,
  type ClusterInfo,
  type DemoDataOptions,
} from '../../src/demo/generator.js';
import { Random, Weighted } from '../../src/demo/random.js';
import { demoDataCommand } from '../../src/cli/commands/demo-data.js';
import { parseEvidenceLine, type EvidenceRecord } from '../../src/evidence/record.js';
import { RISK_CATEGORIES, SOURCE_CATEGORIES } from '../../src/vpa/categories.js';
import { ConfigError } from '../../src/common/errors.js';
import { DEFAULT_URL_MEMBER_CAP } from '../../src/builder/clustering.js';

const SAMPLE_PATH = fileURLToPath(new URL(`../../../${SAMPLE_EVIDENCE.path}`, import.meta.url));

function text(options: DemoDataOptions): string {
  return Buffer.concat([...generateEvidenceChunks(options)]).toString('latin1');
}

interface Generated {
  readonly lines: string[];
  readonly records: EvidenceRecord[];
  readonly raw: Record<string, unknown>[];
  readonly clusters: ClusterInfo[];
}

function generate(options: Omit<DemoDataOptions, 'onCluster'>): Generated {
  const clusters: ClusterInfo[] = [];
  const lines = [...generateEvidence({ ...options, onCluster: (c) => clusters.push(c) })];
  const records = lines.map((line, i) => {
    const result = parseEvidenceLine(line);
    if (!result.ok) assert.fail(`line ${i + 1} rejected (${result.reason}): ${line}`);
    return result.record;
  });
  return { lines, records, raw: lines.map((line) => JSON.parse(line) as Record<string, unknown>), clusters };
}

// One mid-sized run shared by the structural checks keeps the suite fast.
const MEDIUM = { vpas: 20_000, seed: 7 };
let medium: Generated | undefined;
function mediumRun(): Generated {
  medium ??= generate(MEDIUM);
  return medium;
}

test('the PRNG is deterministic and its helpers stay in range', () => {
  const a = new Random(1);
  const b = new Random(1);
  const c = new Random(2);
  const seqA = Array.from({ length: 8 }, () => a.uint32());
  assert.deepEqual(seqA, Array.from({ length: 8 }, () => b.uint32()));
  assert.notDeepEqual(seqA, Array.from({ length: 8 }, () => c.uint32()));
  const r = new Random(3);
  for (let i = 0; i < 10_000; i++) {
    const f = r.float();
    assert.ok(f >= 0 && f < 1);
    const n = r.range(2, 5);
    assert.ok(n >= 2 && n <= 5 && Number.isInteger(n));
    const p = r.pareto(2, 300, 1.15);
    assert.ok(p >= 2 && p <= 300);
  }
  assert.equal(r.digits(12).length, 12);
  const weighted = new Weighted([
    ['common', 99],
    ['rare', 1],
  ]);
  let rare = 0;
  for (let i = 0; i < 10_000; i++) if (weighted.sample(r) === 'rare') rare++;
  assert.ok(rare > 40 && rare < 200, `rare drawn ${rare} times`);
});

test('same options give identical output; a different seed or end gives different output', () => {
  const options = { vpas: 3000, seed: 11 };
  const first = text(options);
  assert.equal(text(options), first);
  assert.notEqual(text({ vpas: 3000, seed: 12 }), first);
  assert.notEqual(text({ ...options, end: DEFAULT_END - 86_400_000 }), first);
  // Chunk size changes the framing, never the bytes.
  assert.equal(Buffer.concat([...generateEvidenceChunks(options, 5000)]).toString('latin1'), first);
  assert.equal([...generateEvidence(options)].join('\n') + '\n', first);
});

test('names exactly the requested number of distinct VPAs, compared lower-cased', () => {
  for (const vpas of [0, 1, 2, 3, 17, 301, 5000]) {
    const lines = [...generateEvidence({ vpas, seed: vpas + 5 })];
    const distinct = new Set(lines.map((line) => (JSON.parse(line) as { upi: string }).upi.toLowerCase()));
    assert.equal(distinct.size, vpas, `--vpas ${vpas}`);
  }
  assert.equal(new Set(mediumRun().records.map((r) => r.upi)).size, MEDIUM.vpas);
});

test('every line is valid evidence with a unique id and a timestamp inside the two-year window', () => {
  for (const end of [DEFAULT_END, Date.UTC(2031, 5, 15, 12, 30, 0, 250)]) {
    const { records, raw } = end === DEFAULT_END ? mediumRun() : generate({ vpas: 2000, seed: 3, end });
    assert.equal(new Set(records.map((r) => r.evidenceId)).size, records.length, 'evidence ids are unique');
    for (const record of records) {
      assert.ok(record.capturedAt >= end - WINDOW_MS && record.capturedAt <= end, `captured_at ${record.capturedAt} outside the window`);
    }
    const stamps = raw.map((item) => item.captured_at as string);
    const share = (re: RegExp): number => stamps.filter((s) => re.test(s)).length / stamps.length;
    assert.ok(share(/\+05:30$/) > 0.6, 'mostly Indian local time');
    assert.ok(share(/Z$/) > 0.05, 'some UTC');
    assert.ok(share(/[+-](?!05:30)\d\d:?\d\d$/) > 0.01, 'a few other offsets');
    assert.ok(share(/\.\d{3}(Z|[+-])/) > 0.1, 'some with milliseconds');
  }
});

test('covers every source and risk category, defaults and screenshots at realistic rates', () => {
  const { raw, records } = mediumRun();
  const sources = new Set(raw.map((item) => item.source_category));
  assert.deepEqual([...sources].sort(), [...SOURCE_CATEGORIES].sort());
  const explicitRisks = new Set(raw.map((item) => item.risk_category).filter((v) => v !== undefined));
  assert.deepEqual([...explicitRisks].sort(), [...RISK_CATEGORIES].sort());
  const absentRisk = raw.filter((item) => !('risk_category' in item)).length / raw.length;
  assert.ok(absentRisk > 0.2 && absentRisk < 0.8, `risk_category absent on ${absentRisk}`);
  const shots = records.filter((r) => r.screenshot).length / records.length;
  assert.ok(shots >= 0.15 && shots <= 0.25, `screenshot_available true on ${shots}`);
  assert.ok(raw.some((item) => !('screenshot_available' in item)), 'the screenshot field is sometimes omitted');
  const perVpa = records.length / MEDIUM.vpas;
  assert.ok(perVpa >= 1.5 && perVpa <= 2.2, `${perVpa} items per VPA`);
  // Telegram items are on t.me, web items are not.
  for (const item of raw) assert.equal((item.url as string).startsWith('https://t.me/'), item.source_category === 'telegram');
});

test('handles come in the expected shapes, with case variants of the same VPA', () => {
  const { raw } = mediumRun();
  const upis = raw.map((item) => item.upi as string);
  const share = (re: RegExp): number => upis.filter((u) => re.test(u)).length / upis.length;
  assert.ok(share(/^[6-9]\d{9}@/) > 0.15, 'mobile numbers');
  assert.ok(share(/^[6-9]\d{9}[-._]\d@/) > 0.02, 'mobile numbers with a suffix');
  assert.ok(share(/^[a-z]+\.[a-z]+@/) > 0.03, 'firstname.lastname');
  assert.ok(share(/^(paytmqr|bharatpe\.|gpay-|q\d{9}@)/i) > 0.05, 'merchant handles');
  assert.ok(share(/^[a-z0-9.]*[_-][a-z0-9._-]*@/i) > 0.02, 'handles with _ or -');
  const providers = new Map<string, number>();
  for (const u of upis) {
    const p = u.slice(u.indexOf('@') + 1).toLowerCase();
    providers.set(p, (providers.get(p) ?? 0) + 1);
  }
  assert.ok(providers.size > 25, `${providers.size} providers`);
  assert.ok((providers.get('ybl') ?? 0) > (providers.get('wasbi') ?? 0) * 20, 'ybl far more common than rare handles');

  const spellings = new Map<string, Set<string>>();
  for (const u of upis) {
    const key = u.toLowerCase();
    let set = spellings.get(key);
    if (set === undefined) spellings.set(key, (set = new Set()));
    set.add(u);
  }
  assert.ok([...spellings.values()].filter((s) => s.size > 1).length > 20, 'some VPAs appear in more than one letter case');
});

test('gangs have 2 to 300 members, urls never cross clusters, and only aggregator pages join unrelated VPAs', () => {
  const { records, clusters } = mediumRun();
  const gangs = clusters.filter((c) => c.kind === 'gang');
  assert.ok(gangs.length > 50);
  for (const gang of gangs) assert.ok(gang.newVpas >= MIN_GANG_SIZE && gang.newVpas <= MAX_GANG_SIZE, `gang of ${gang.newVpas}`);
  const sizes = gangs.map((g) => g.newVpas).sort((a, b) => a - b);
  assert.ok(sizes[Math.floor(sizes.length / 2)]! <= 5, 'most gangs are small');
  assert.ok(sizes.at(-1)! >= 50, 'the size distribution has a long tail');
  for (const single of clusters.filter((c) => c.kind === 'singleton')) assert.equal(single.newVpas, 1);
  assert.equal(
    clusters.reduce((sum, c) => sum + c.newVpas, 0),
    MEDIUM.vpas,
  );
  const aggregators = clusters.filter((c) => c.kind === 'aggregator');
  assert.ok(aggregators.length >= 1);
  // Aggregator pages are meant to trip the engine's per-url cap; gang pages never should.
  assert.ok(MIN_AGGREGATOR_SIZE > DEFAULT_URL_MEMBER_CAP && MAX_GANG_SIZE < DEFAULT_URL_MEMBER_CAP);
  const vpasOnUrl = new Map<string, Set<string>>();
  for (const r of records) {
    let set = vpasOnUrl.get(r.url);
    if (set === undefined) vpasOnUrl.set(r.url, (set = new Set()));
    set.add(r.upi);
  }
  for (const aggregator of aggregators) {
    assert.equal(aggregator.urls.length, 1);
    assert.equal(vpasOnUrl.get(aggregator.urls[0]!)?.size, aggregator.listedVpas);
    assert.ok(aggregator.listedVpas >= MIN_AGGREGATOR_SIZE, `aggregator listing ${aggregator.listedVpas}`);
  }

  const owner = new Map<string, number>();
  clusters.forEach((cluster, index) => {
    for (const url of cluster.urls) {
      assert.equal(owner.get(url), undefined, `${url} used by two clusters`);
      owner.set(url, index);
    }
  });
  const aggregatorUrls = new Set(aggregators.flatMap((a) => a.urls));
  for (const r of records) assert.ok(owner.has(r.url), `${r.url} not reported by any cluster`);

  // Connected components over shared urls, leaving out aggregator pages: none larger than a gang.
  const parent = new Map<string, string>();
  const find = (x: string): string => {
    let root = x;
    while (parent.get(root) !== root) root = parent.get(root)!;
    parent.set(x, root);
    return root;
  };
  const firstOnUrl = new Map<string, string>();
  for (const r of records) {
    if (!parent.has(r.upi)) parent.set(r.upi, r.upi);
    if (aggregatorUrls.has(r.url)) continue;
    const other = firstOnUrl.get(r.url);
    if (other === undefined) firstOnUrl.set(r.url, r.upi);
    else parent.set(find(r.upi), find(other));
  }
  const componentSize = new Map<string, number>();
  for (const vpa of parent.keys()) componentSize.set(find(vpa), (componentSize.get(find(vpa)) ?? 0) + 1);
  const largest = [...componentSize.values()].reduce((a, b) => Math.max(a, b), 0);
  assert.ok(largest <= MAX_GANG_SIZE, `component of ${largest} VPAs`);
  assert.equal(largest, sizes.at(-1), 'each gang is one connected group');
});

test('the committed sample is exactly what its documented options produce', async () => {
  const clusters: ClusterInfo[] = [];
  const expected = Buffer.concat([
    ...generateEvidenceChunks({ vpas: SAMPLE_EVIDENCE.vpas, seed: SAMPLE_EVIDENCE.seed, onCluster: (c) => clusters.push(c) }),
  ]);
  const committed = await readFile(SAMPLE_PATH);
  assert.ok(committed.equals(expected), `${SAMPLE_EVIDENCE.path} differs from the generator output; regenerate it`);
  assert.ok(committed.length < 1024 * 1024);
  assert.ok(clusters.some((c) => c.kind === 'gang' && c.newVpas >= 20), 'a gang of 20 or more');
  assert.ok(clusters.some((c) => c.kind === 'aggregator' && c.listedVpas > 50), 'an aggregator page with more than 50 VPAs');
  assert.ok(clusters.some((c) => c.kind === 'aggregator' && c.listedVpas > DEFAULT_URL_MEMBER_CAP), 'one above the url cap');
  const raw = committed
    .toString('latin1')
    .trimEnd()
    .split('\n')
    .map((line) => {
      assert.ok(parseEvidenceLine(line).ok, line);
      return JSON.parse(line) as Record<string, unknown>;
    });
  assert.deepEqual(new Set(raw.map((item) => item.source_category)), new Set(SOURCE_CATEGORIES));
  assert.deepEqual(new Set(raw.map((item) => item.risk_category).filter((v) => v !== undefined)), new Set(RISK_CATEGORIES));
});

test('writeDemoData writes a file via a temporary name and honours stream backpressure', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'demo-data-test-'));
  try {
    const options = { vpas: 4000, seed: 5 };
    const expected = text(options);
    const path = join(dir, 'nested', 'evidence.ndjson');
    const summary = await writeDemoData(options, path);
    assert.equal(await readFile(path, 'latin1'), expected);
    assert.deepEqual(summary, { vpas: 4000, lines: expected.split('\n').length - 1, bytes: expected.length });
    assert.deepEqual(await readdir(join(dir, 'nested')), ['evidence.ndjson']);

    // A slow consumer with a tiny buffer: every write must wait for 'drain'.
    const received: Buffer[] = [];
    const slow = new Writable({
      highWaterMark: 1024,
      write(chunk: Buffer, _encoding, callback) {
        received.push(chunk);
        setImmediate(callback);
      },
    });
    let drains = 0;
    slow.on('drain', () => drains++);
    await writeDemoData(options, slow);
    assert.equal(Buffer.concat(received).toString('latin1'), expected);
    assert.ok(received.length > 1 && drains >= received.length - 1, `${received.length} chunks, ${drains} drains`);

    // A failing stream rejects instead of hanging or crashing.
    const broken = new Writable({
      write(_chunk, _encoding, callback) {
        callback(new Error('disk full'));
      },
    });
    await assert.rejects(writeDemoData(options, broken), /disk full/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('demo-data command: options, output file and errors', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'demo-data-cli-'));
  try {
    const out = join(dir, 'demo.ndjson');
    const code = await demoDataCommand.run(['--vpas', '250', '--seed', '9', '--end', '2025-03-01T10:00:00+05:30', '--out', out]);
    assert.equal(code, 0);
    const end = Date.UTC(2025, 2, 1, 4, 30);
    assert.equal(await readFile(out, 'latin1'), text({ vpas: 250, seed: 9, end }));

    for (const argv of [
      ['--vpas', 'many'],
      ['--vpas', '0'],
      ['--seed', '-1'],
      ['--seed', '4294967296'],
      ['--end', '2026-01-01T00:00:00'],
      ['--end', 'yesterday'],
      ['--end', '1970-01-01T00:00:00Z'],
      ['--out', ''],
      ['--rows', '5'],
      ['stray'],
    ]) {
      await assert.rejects(demoDataCommand.run(argv), ConfigError, argv.join(' '));
    }
    assert.match(demoDataCommand.usage, /--vpas N/);
    assert.match(demoDataCommand.usage, /--seed S/);
    assert.match(demoDataCommand.usage, /--out FILE/);
    assert.match(demoDataCommand.usage, /--end ISO/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('bad generator options are refused', () => {
  assert.throws(() => [...generateEvidence({ vpas: -1, seed: 1 })], RangeError);
  assert.throws(() => [...generateEvidence({ vpas: 1.5, seed: 1 })], RangeError);
  assert.throws(() => [...generateEvidence({ vpas: 1, seed: 2 ** 32 })], RangeError);
  assert.throws(() => [...generateEvidence({ vpas: 1, seed: 1, end: Number.NaN })], RangeError);
});
