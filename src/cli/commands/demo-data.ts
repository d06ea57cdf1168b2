import { ConfigError, ErrorCode, UnavailableError } from '../../common/errors.js';
import { parseIsoWithZone } from '../../common/time.js';
import {
  DEFAULT_END,
  MAX_END,
  MAX_VPAS,
  MIN_AGGREGATOR_SIZE,
  MIN_END,
  SAMPLE_EVIDENCE,
  writeDemoData,
  type DemoDataOptions,
} from '../../demo/generator.js';
import { intOption, parseCommandArgs, type Command } from '../command.js';

const DEFAULT_VPAS = 10_000;
const DEFAULT_SEED = 42;

const usage = `Usage: upi-risk demo-data [--vpas N] [--seed S] [--out FILE] [--end ISO]

Write synthetic evidence as NDJSON, one item per line, in the format
\`upi-risk ingest\` accepts: betting-site, phishing, scam and Telegram pages
naming flagged VPAs. About 45% of the VPAs belong to gangs of 2 to 300
accounts sharing pages or channels; the rest are seen on pages of their own.
Every 8,000 to 25,000 VPAs an aggregator page (a forum thread, a list of
deposit IDs) names ${MIN_AGGREGATOR_SIZE} or more unrelated VPAs, more than the
engine's default per-url cap. Each VPA has one to several evidence items
(about 1.9 on average). Timestamps span the two years before --end.

The output depends only on the options: the same options always give
byte-identical output.

Options:
  --vpas N     distinct flagged VPAs to name, 1 to ${MAX_VPAS} (default ${DEFAULT_VPAS})
  --seed S     random seed, 0 to 4294967295 (default ${DEFAULT_SEED})
  --out FILE   write to FILE instead of standard output; the file appears
               only once it is complete
  --end ISO    newest capture instant, ISO 8601 with a zone
               (default ${new Date(DEFAULT_END).toISOString().replace('.000Z', 'Z')})

The committed ${SAMPLE_EVIDENCE.path} is the output of
  upi-risk demo-data --vpas ${SAMPLE_EVIDENCE.vpas} --seed ${SAMPLE_EVIDENCE.seed} --out ${SAMPLE_EVIDENCE.path}

Exit status: 0 on success, 2 for bad options, 1 when writing failed.`;

export const demoDataCommand: Command = {
  name: 'demo-data',
  summary: 'write deterministic synthetic evidence (NDJSON) for demos and load tests',
  usage,
  async run(argv) {
    const { values } = parseCommandArgs(argv, {
      vpas: { type: 'string' },
      seed: { type: 'string' },
      out: { type: 'string' },
      end: { type: 'string' },
    });
    const options: DemoDataOptions = {
      vpas: intOption('vpas', values.vpas, DEFAULT_VPAS, 1, MAX_VPAS),
      seed: intOption('seed', values.seed, DEFAULT_SEED, 0, 0xffffffff),
      end: values.end === undefined ? DEFAULT_END : parseEnd(values.end),
    };
    const out = values.out;
    if (out === undefined) {
      try {
        await writeDemoData(options, process.stdout);
      } catch (error) {
        // A reader that stops early (| head) is not a failure of ours.
        if ((error as NodeJS.ErrnoException).code === 'EPIPE') return 0;
        throw writeFailed('standard output', error);
      }
      return 0;
    }
    if (out.length === 0) throw new ConfigError('--out must name a file');
    const started = performance.now();
    let summary;
    try {
      summary = await writeDemoData(options, out);
    } catch (error) {
      throw writeFailed(out, error);
    }
    const seconds = (performance.now() - started) / 1000;
    process.stderr.write(
      `demo-data: wrote ${summary.lines} evidence items naming ${summary.vpas} VPAs ` +
        `(${summary.bytes} bytes) to ${out} in ${seconds.toFixed(1)} s\n`,
    );
    return 0;
  },
};

function writeFailed(target: string, error: unknown): UnavailableError {
  return new UnavailableError(ErrorCode.DEMO_DATA_WRITE, `cannot write demo data to ${target}: ${(error as Error).message}`, { cause: error });
}

function parseEnd(text: string): number {
  const end = parseIsoWithZone(text);
  if (Number.isNaN(end)) throw new ConfigError(`--end must be an ISO 8601 timestamp with a zone, got ${JSON.stringify(text)}`);
  if (end < MIN_END || end > MAX_END) throw new ConfigError('--end must be between 1972-01-01 and 9999-12-30');
  // Whole milliseconds keep the generator's arithmetic exact.
  return Math.floor(end);
}
