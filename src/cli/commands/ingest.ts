import { dataDir } from '../../common/data-dir.js';
import { ConfigError } from '../../common/errors.js';
import { ingestFile } from '../../evidence/store.js';
import { MAX_REPORTED_ERRORS, type LineError } from '../../evidence/lines.js';
import { parseCommandArgs, type Command } from '../command.js';
import { commandLogger } from '../cli-logger.js';
import { removeStaleTempFiles } from '../../common/temp-cleanup.js';
import { STORE_OPTIONS, STORE_USAGE, chooseStore } from '../store-options.js';
import { connectStore, redactStoreUrl, type StoreLocation } from '../../store/postgres.js';
import { checkSchema } from '../../store/migrations.js';
import { appendEvidenceFile } from '../../store/evidence-log.js';

const usage = `Usage: upi-risk ingest [--data-dir DIR | --store URL] FILE...

Validate NDJSON evidence files and store them durably in DIR/evidence, or,
with --store, append them to the fleet's evidence log in PostgreSQL (each
file one transaction; an evidence id the log holds already is skipped and
counted as a duplicate).

Each file is all-or-nothing: a file with any invalid line is refused whole,
and every bad line is reported as FILE:LINE: reason (the first ${MAX_REPORTED_ERRORS} per
file). Other files on the same command line are still stored. A stored file
is fsynced and renamed into place before success is reported, so nothing
acknowledged is lost. A running server picks new evidence up by itself;
otherwise run \`upi-risk build\`.

Options:
  --data-dir DIR        data directory (default: $UPI_RISK_DATA_DIR or var/data)
${STORE_USAGE}

Exit status: 0 when every file was stored, 1 when any file was refused.`;

export const ingestCommand: Command = {
  name: 'ingest',
  summary: 'validate and store NDJSON evidence files',
  usage,
  async run(argv) {
    const { values, positionals } = parseCommandArgs(argv, { 'data-dir': { type: 'string' }, ...STORE_OPTIONS }, true);
    if (positionals.length === 0) throw new ConfigError('no evidence files given (upi-risk ingest --help)');
    const location = chooseStore(values);
    if (location !== null) {
      if (values['data-dir'] !== undefined) throw new ConfigError('--data-dir and --store exclude each other');
      return ingestIntoStore(location, positionals);
    }
    const dir = dataDir(values['data-dir']);
    // The evidence folder is where ingests write; each ingest removes what killed ones left
    // there, so no server restart is needed for that. Other live ingests' files stay (temp-cleanup.ts).
    await removeStaleTempFiles([dir.evidence], commandLogger('ingest'));
    let refused = 0;
    let storedLines = 0;
    for (const file of positionals) {
      const result = await ingestFile(dir, file);
      reportBadLines(file, result.errors, result.invalidLines);
      if (result.storedAs !== null) {
        storedLines += result.validLines;
        process.stdout.write(`stored ${file}: ${result.validLines} evidence lines as evidence/${result.storedAs}\n`);
      } else if (result.invalidLines > 0) {
        refused++;
        process.stdout.write(`refused ${file}: ${result.invalidLines} invalid of ${result.invalidLines + result.validLines} lines; nothing from this file was stored\n`);
      } else {
        process.stdout.write(`skipped ${file}: no evidence lines\n`);
      }
    }
    process.stdout.write(
      `ingest: ${positionals.length - refused} of ${positionals.length} files stored (${storedLines} lines) in ${dir.evidence}\n`,
    );
    return refused === 0 ? 0 : 1;
  },
};

/** `ingest --store`: each file appended to the evidence log in a transaction of its own. */
async function ingestIntoStore(location: StoreLocation, files: readonly string[]): Promise<number> {
  const client = await connectStore(location);
  try {
    await checkSchema(client, location);
    let refused = 0;
    let added = 0;
    let duplicates = 0;
    for (const file of files) {
      const result = await appendEvidenceFile(client, location, file);
      reportBadLines(file, result.errors, result.invalidLines);
      if (!result.accepted) {
        refused++;
        process.stdout.write(`refused ${file}: ${result.invalidLines} invalid of ${result.invalidLines + result.validLines} lines; nothing from this file was stored\n`);
      } else if (result.validLines === 0) {
        process.stdout.write(`skipped ${file}: no evidence lines\n`);
      } else {
        added += result.added;
        duplicates += result.duplicates;
        process.stdout.write(`stored ${file}: ${result.validLines} evidence lines, ${result.added} new, ${result.duplicates} duplicates; log at position ${result.position}\n`);
      }
    }
    process.stdout.write(
      `ingest: ${files.length - refused} of ${files.length} files stored (${added} new items, ${duplicates} duplicates) in ${redactStoreUrl(location.url)} schema ${location.schema}\n`,
    );
    return refused === 0 ? 0 : 1;
  } finally {
    await client.end().catch(() => {});
  }
}

function reportBadLines(file: string, errors: readonly LineError[], invalidLines: number): void {
  for (const e of errors) process.stderr.write(`${e.file}:${e.line}: ${e.reason}\n`);
  if (invalidLines > errors.length) process.stderr.write(`${file}: ${invalidLines - errors.length} more invalid lines not listed\n`);
}
