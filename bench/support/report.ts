/**
 * Shared by the micro-benchmarks: option parsing, one table row per tinybench
 * task, and the JSON report file.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { Bench, Task } from 'tinybench';

export interface Row {
  task: string;
  'ops/s': number;
  'mean ns': number;
  'p50 ns': number;
  'p99 ns': number;
  samples: number;
}

/** One row per task; throws when a task did not complete, so a failed task never reads as a figure. */
export function taskRows(bench: Bench): Row[] {
  return bench.tasks.map((task: Task) => {
    const result = task.result;
    if (result.state !== 'completed') throw new Error(`${task.name}: ${result.state}`);
    const latency = result.latency;
    return {
      task: task.name,
      'ops/s': Math.round(1000 / latency.mean),
      'mean ns': round1(latency.mean * 1e6),
      'p50 ns': round1(latency.p50 * 1e6),
      'p99 ns': round1(latency.p99 * 1e6),
      samples: latency.samplesCount,
    };
  });
}

/** Nearest-rank percentile of `sorted` (ascending). */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

export function round1(x: number): number {
  return Math.round(x * 10) / 10;
}

export function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** The item with the median `key` (the lower of the two middle ones for an even count); `items` must not be empty. */
export function medianBy<T>(items: readonly T[], key: (item: T) => number): T {
  const sorted = [...items].sort((a, b) => key(a) - key(b));
  return sorted[(sorted.length - 1) >> 1]!;
}

/** A whole number of at least `min` (default 1) from option `--name`; underscores allowed as digit separators. */
export function wholeNumberOption(name: string, text: string, min = 1): number {
  const n = Number(text.replaceAll('_', ''));
  if (text.trim() === '' || !Number.isSafeInteger(n) || n < min) throw new Error(`--${name} must be a whole number of at least ${min}, got ${text}`);
  return n;
}

/** The options of the micro-benchmarks bench/run.ts runs: --vpas (snapshot size), --time (ms per task), --json FILE. */
export function microOptions(): { vpas: number; time: number; json: string | undefined } {
  const { values } = parseArgs({
    options: {
      vpas: { type: 'string', default: '1000000' },
      time: { type: 'string', default: '2000' },
      json: { type: 'string' },
    },
    strict: true,
  });
  return { vpas: wholeNumberOption('vpas', values.vpas), time: wholeNumberOption('time', values.time), json: values.json };
}

/** A micro-benchmark's JSON report: its name, the Node version, the date and the snapshot size, then `figures`. */
export function writeBenchReport(path: string, benchmark: string, vpas: number | null, figures: object): void {
  writeReport(path, { benchmark, node: process.version, date: new Date().toISOString(), vpas, ...figures });
}

export function writeReport(path: string, report: object): void {
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
}
