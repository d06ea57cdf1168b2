import { dataDir } from '../../common/data-dir.js';
import { MAX_BUILD_THREADS, SnapshotBuilder, type BuildProgress } from '../../builder/snapshot-builder.js';
import { DEFAULT_URL_MEMBER_CAP } from '../../builder/clustering.js';
import { evidenceMaxAge, parseCommandArgs, intOption, type Command } from '../command.js';
import { progressReporter } from '../progress.js';
import { commandLogger } from '../cli-logger.js';

const usage = `Usage: upi-risk build [--data-dir DIR] [--threads N] [--url-cap N] [--evidence-max-age-days N]

Build a snapshot from all evidence in DIR/evidence on a worker pool and write
it atomically to DIR/snapshots. A running server also rebuilds by itself when
new evidence lands; this command is for first builds and operators.

Options:
  --data-dir DIR   data directory (default: $UPI_RISK_DATA_DIR or var/data)
  --threads N      worker threads (default: every core, at normal priority;
                   beside a live server, give it fewer: a running server
                   builds on every core but one, at nice +10)
  --url-cap N      a url seen with more than N distinct VPAs does not link
                   them into a cluster (default: ${DEFAULT_URL_MEMBER_CAP})
  --evidence-max-age-days N
                   evidence captured more than N days before now does not
                   count (1 to 36500; default: evidence counts for ever)`;

export const buildCommand: Command = {
  name: 'build',
  summary: 'build a snapshot from the stored evidence',
  usage,
  async run(argv) {
    const { values } = parseCommandArgs(argv, {
      'data-dir': { type: 'string' },
      threads: { type: 'string' },
      'url-cap': { type: 'string' },
      'evidence-max-age-days': { type: 'string' },
    });
    const dir = dataDir(values['data-dir']);
    const threads = values.threads === undefined ? undefined : intOption('threads', values.threads, 1, 1, MAX_BUILD_THREADS);
    const urlMemberCap = intOption('url-cap', values['url-cap'], DEFAULT_URL_MEMBER_CAP, 2, 1_000_000);
    const evidenceMaxAgeMs = evidenceMaxAge(values['evidence-max-age-days']);
    const builder = new SnapshotBuilder(threads === undefined ? {} : { threads });
    const progress = progressReporter<BuildProgress>((p) => ({ label: p.phase, done: p.done, total: p.total }));
    try {
      const report = await builder.build({ dataDir: dir, urlMemberCap, evidenceMaxAgeMs, onProgress: progress.update, logger: commandLogger('build') });
      progress.stop();
      const m = report.meta;
      process.stdout.write(
        [
          `snapshot ${m.id} written to ${report.path}`,
          `  ${m.vpaCount} flagged VPAs, ${m.clusterCount} clusters, ${m.urlCount} urls, ${m.evidenceCount} evidence items from ${m.evidenceFiles.length} files`,
          `  skipped ${report.invalidLines} invalid lines and ${report.duplicateEvidence} repeated evidence ids`,
          `  ${(report.durationMs / 1000).toFixed(2)} s (parse ${ms(report.phaseMs.parse)}, dedup ${ms(report.phaseMs.dedup)}, aggregate ${ms(report.phaseMs.aggregate)}, assemble ${ms(report.phaseMs.assemble)}, write ${ms(report.phaseMs.write)}; ${report.cachedChunks} of ${report.chunks} evidence chunks from the parse cache)`,
          ...report.invalidSamples.map((s) => `  invalid: ${s}`),
        ].join('\n') + '\n',
      );
      return 0;
    } finally {
      progress.stop();
      await builder.close();
    }
  },
};

function ms(value: number): string {
  return `${Math.round(value)} ms`;
}
