/**
 * h(upi), SHA-256 of the canonical VPA (src/vpa/vpa-hash.ts), as a range
 * answer computes it for each VPA it names and the client's mirror for each
 * payee it checks: in JavaScript into reused words, against node:crypto's
 * one-shot `hash` and `createHash`, each with the lower-casing it needs,
 * over VPAs of the shapes callers send (10 to 40 characters).
 *
 *   node dist/bench/vpa-hash.bench.js [--time 2000] [--json FILE]
 *
 * (--vpas is accepted, as by every micro bench, and ignored.)
 */
import { createHash, hash } from 'node:crypto';
import { Bench } from 'tinybench';
import { vpaHashWords } from '../src/vpa/vpa-hash.js';
import { mulberry32 } from '../test/fixtures/random.js';
import { microOptions, taskRows, writeBenchReport } from './support/report.js';

const { time, json } = microOptions();
const next = mulberry32(3);
const PROVIDERS = ['ybl', 'okaxis', 'okhdfcbank', 'paytm', 'ibl', 'axl'];
const vpas = Array.from({ length: 4096 }, (_, i) =>
  next() < 0.6 ? `${6_000_000_000 + Math.floor(next() * 3e9)}@${PROVIDERS[i % PROVIDERS.length]}` : `Ramesh.Kumar.${Math.floor(next() * 1e6)}@${PROVIDERS[i % PROVIDERS.length]}`,
);
const words = new Uint32Array(8);
let i = 0;
let sink = 0;

const bench = new Bench({ time, warmupTime: Math.min(1000, time) });
bench
  .add('vpaHashWords (JavaScript, reused words)', () => {
    sink ^= vpaHashWords(vpas[i++ & 4095]!, words)[0]!;
  })
  .add("node:crypto hash('sha256') of the lower-cased VPA", () => {
    sink ^= hash('sha256', vpas[i++ & 4095]!.toLowerCase(), 'buffer')[0]!;
  })
  .add('node:crypto createHash of the lower-cased VPA', () => {
    sink ^= createHash('sha256').update(vpas[i++ & 4095]!.toLowerCase()).digest()[0]!;
  });
await bench.run();
if (sink === 0.5) process.stdout.write('');
console.table(taskRows(bench));
if (json !== undefined) writeBenchReport(json, 'vpa-hash', null, { tasks: taskRows(bench) });
