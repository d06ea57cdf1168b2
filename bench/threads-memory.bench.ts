/**
 * Resident memory of `serve` with 1 and with N serving threads on the same
 * snapshot: the threads share one copy of the index (SharedArrayBuffers), so
 * N threads should cost the single-thread figure plus a per-thread overhead.
 *
 *   node dist/bench/threads-memory.bench.js --data-dir DIR [--threads 1,2] [--json FILE]
 *
 * DIR must hold a built snapshot (e.g. one kept by engine-scale.bench with --keep).
 */
import { spawn } from 'node:child_process';
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { cpus, totalmem } from 'node:os';
import { useServiceAllocatorSettings } from './support/allocator.js';

const { values: args } = parseArgs({
  options: { 'data-dir': { type: 'string' }, threads: { type: 'string', default: '1,2' }, json: { type: 'string' } },
  strict: true,
});
if (args['data-dir'] === undefined) throw new Error('--data-dir is required');
const CLI = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
useServiceAllocatorSettings();

async function residentMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

const rows: { threads: number; rssMiB: number; vpas: number; startS: number }[] = [];
for (const threads of args.threads.split(',').map(Number)) {
  const started = Date.now();
  const child = spawn(process.execPath, [CLI, 'serve', '--data-dir', args['data-dir'], '--plain-http', '--port', '0', '--threads', String(threads), '--log-level', 'warn'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const base = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m !== null) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}`)));
  });
  const startS = (Date.now() - started) / 1000;
  // Touch every thread a little so lazily built state exists, then let memory settle.
  for (let i = 0; i < 50; i++) await (await fetch(`${base}/readyz`)).arrayBuffer();
  await new Promise((r) => setTimeout(r, 3000));
  const ready = (await (await fetch(`${base}/readyz`)).json()) as { vpas: number };
  rows.push({ threads, rssMiB: Math.round(await residentMiB(child.pid!)), vpas: ready.vpas, startS });
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
}
const single = rows.find((r) => r.threads === 1);
const table = rows.map((r) => ({
  ...r,
  perExtraThreadMiB: single === undefined || r.threads === 1 ? 0 : Math.round((r.rssMiB - single.rssMiB) / (r.threads - 1)),
}));
console.table(table);
if (args.json !== undefined) {
  await mkdir(dirname(args.json), { recursive: true });
  await writeFile(args.json, JSON.stringify({ machine: `${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`, date: new Date().toISOString(), rows: table }, null, 2) + '\n');
}
