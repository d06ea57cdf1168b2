import { dataDir } from '../../common/data-dir.js';
import { ConfigError } from '../../common/errors.js';
import { ingestFile, MAX_REPORTED_ERRORS } from '../../evidence/store.js';
import { parseCommandArgs, type Command } from '../command.js';
import { commandLogger } from '../cli-logger.js';
import { removeStaleTempFiles } from '../../common/temp-cleanup.js';

const usage = `Usage: upi-risk ingest [--data-dir DIR] FILE...

Validate NDJSON evidence files and store them durably in DIR/evidence.

Each file is all-or-nothing: a file with any invalid line is refused whole,
and every bad line is reported as FILE:LINE: reason (the first ${MAX_REPORTED_ERRORS} per
file). Other files on the same command line are still stored. A stored file
is fsynced and renamed into place before success is reported, so nothing
acknowledged is lost. A running server picks new evidence up by itself;
otherwise run \`upi-risk build\`.

Options:
  --data-dir DIR   data directory (default: $UPI_RISK_DATA_DIR or var/data)

Exit status: 0 when every file was stored, 1 when any file was refused.`;

export const ingestCommand: Command = {
  name: 'ingest',
  summary: 'validate and store NDJSON evidence files',
  usage,
  async run(argv) {
    const { values, positionals } = parseCommandArgs(argv, { 'data-dir': { type: 'string' } }, true);
    if (positionals.length === 0) throw new ConfigError('no evidence files given (upi-risk ingest --help)');
    const dir = dataDir(values['data-dir']);
    // The evidence folder is where ingests write; each ingest removes what killed ones left
    // there, so no server restart is needed for that. Other live ingests' files stay (temp-cleanup.ts).
    await removeStaleTempFiles([dir.evidence], commandLogger('ingest'));
    let refused = 0;
    let storedLines = 0;
    for (const file of positionals) {
      const result = await ingestFile(dir, file);
      for (const e of result.errors) process.stderr.write(`${e.file}:${e.line}: ${e.reason}\n`);
      if (result.invalidLines > result.errors.length) {
        process.stderr.write(`${file}: ${result.invalidLines - result.errors.length} more invalid lines not listed\n`);
      }
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
