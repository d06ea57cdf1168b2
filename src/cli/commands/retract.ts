import { readFile } from 'node:fs/promises';
import { CLI_ACTOR, FileAuditLog, auditLogPath } from '../../access/audit-log.js';
import { MAX_CORRECTION_REASON, MAX_RETRACTION_IDS } from '../../api/admin-schemas.js';
import { dataDir } from '../../common/data-dir.js';
import { ConfigError } from '../../common/errors.js';
import { correctionJournalPath } from '../../corrections/journal.js';
import { CorrectionLedger, type RetractionTally } from '../../corrections/ledger.js';
import { CLI_BY, isEvidenceId, isReason } from '../../corrections/records.js';
import { locateStoredEvidence } from '../../evidence/locate.js';
import { commandLogger } from '../cli-logger.js';
import { parseCommandArgs, type Command } from '../command.js';
import { STORE_OPTIONS, chooseStore } from '../store-options.js';
import { storePool, type StoreLocation } from '../../store/postgres.js';
import { checkSchema } from '../../store/migrations.js';
import { PostgresAuditLog } from '../../store/postgres-audit-log.js';
import { logRetraction, type LoggedRetraction } from '../../store/correction-log.js';

const usage = `Usage: upi-risk retract [--data-dir DIR | --store URL] --reason TEXT [--file FILE] [ID...]

Retract evidence items by their evidence_id: a retracted item never counts
again, and an item sent again with its id stays a duplicate. The ids are
those given, and those of FILE, one a line (blank lines skipped). Ids that
name no stored evidence are reported as unknown, and nothing is stored of
them. What is retracted is recorded in DIR/state/corrections.ndjson (fsynced
before this command says so) and in the audit log (DIR/audit.ndjson), with
"cli" as who and TEXT as why. A server running on DIR serves it within a
second, and tells the watchlists holding the VPAs.

Prints what POST /v1/admin/retractions answers, as JSON:
  {"retracted": N, "unknown": [ids], "already_retracted": N, "data_version": null}
data_version is null: no server serves the data directory from here.

Options:
  --data-dir DIR   data directory (default: $UPI_RISK_DATA_DIR or var/data)
  --reason TEXT    why, 1 to ${MAX_CORRECTION_REASON} characters (required)
  --file FILE      more ids, one a line
  --store URL      the fleet's PostgreSQL store instead of a data directory
                   (with --store-schema NAME): the retraction goes into its
                   log, and every follower serves it within a second

Exit status: 0 when recorded (unknown ids included), 2 for a usage error
(no ids, no reason, a malformed id), 1 when the journal cannot be written.`;

export const retractCommand: Command = {
  name: 'retract',
  summary: 'retract evidence items by id, with a reason',
  usage,
  async run(argv) {
    const { values, positionals } = parseCommandArgs(argv, { 'data-dir': { type: 'string' }, reason: { type: 'string' }, file: { type: 'string' }, ...STORE_OPTIONS }, true);
    const location = chooseStore(values);
    if (location !== null && values['data-dir'] !== undefined) throw new ConfigError('--data-dir and --store exclude each other');
    const reason = values.reason;
    if (reason === undefined || !isReason(reason)) throw new ConfigError(`--reason must be 1 to ${MAX_CORRECTION_REASON} characters, not all spaces, without control characters but tabs and line breaks`);
    const ids = [...positionals, ...(values.file === undefined ? [] : await idsOfFile(values.file))];
    if (ids.length === 0) throw new ConfigError('no evidence ids given (upi-risk retract --help)');
    const malformed = ids.find((id) => !isEvidenceId(id));
    if (malformed !== undefined) throw new ConfigError(`${JSON.stringify(malformed.slice(0, 80))} is not an evidence id: 1 to 256 characters, no control characters`);

    const wanted = [...new Set(ids)];
    if (location !== null) {
      process.stdout.write(`${JSON.stringify({ ...(await retractInStore(location, wanted, reason)), data_version: null })}\n`);
      return 0;
    }
    const dir = dataDir(values['data-dir']);
    const located = await locateStoredEvidence(dir, wanted);
    const ledger = await CorrectionLedger.open({ path: correctionJournalPath(dir), audit: new FileAuditLog(auditLogPath(dir)), logger: commandLogger('retract') });
    const total: { retracted: number; unknown: string[]; already_retracted: number } = { retracted: 0, unknown: [], already_retracted: 0 };
    // One journal record holds at most MAX_RETRACTION_IDS ids, as one request does.
    for (let at = 0; at < wanted.length; at += MAX_RETRACTION_IDS) {
      const tally: RetractionTally = await ledger.retract(wanted.slice(at, at + MAX_RETRACTION_IDS), located, reason, CLI_ACTOR);
      total.retracted += tally.retracted;
      total.unknown.push(...tally.unknown);
      total.already_retracted += tally.already_retracted;
    }
    process.stdout.write(`${JSON.stringify({ ...total, data_version: null })}\n`);
    return 0;
  },
};

/** Retract `ids` in the fleet store's log (correction-log.ts), a request's worth at a time, audited as the CLI's. */
async function retractInStore(location: StoreLocation, ids: readonly string[], reason: string): Promise<RetractionTally> {
  const pool = storePool(location, 1);
  try {
    await checkSchema(pool, location);
    const audit = new PostgresAuditLog(pool, location);
    const total = { retracted: 0, unknown: [] as string[], already_retracted: 0 };
    for (let at = 0; at < ids.length; at += MAX_RETRACTION_IDS) {
      const chunk = ids.slice(at, at + MAX_RETRACTION_IDS);
      const client = await pool.connect();
      let logged: LoggedRetraction;
      try {
        logged = await logRetraction(client, location, chunk, reason, CLI_BY);
      } finally {
        client.release();
      }
      if (logged.position !== null) {
        const details = { reason, evidence_ids: chunk.filter((id) => !logged.unknown.includes(id)), upis: logged.upis, already_retracted: logged.alreadyRetracted, unknown: logged.unknown.length };
        await audit.append({ actor: CLI_ACTOR, action: 'evidence.retracted', target: `position-${logged.position}`, details });
      }
      total.retracted += logged.retracted;
      total.unknown.push(...logged.unknown);
      total.already_retracted += logged.alreadyRetracted;
    }
    return total;
  } finally {
    await pool.end().catch(() => {});
  }
}

/** The ids of a file, one a line; a line ends at `\n` or `\r\n`. */
async function idsOfFile(file: string): Promise<string[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new ConfigError(`cannot read --file ${file}: ${(error as Error).message}`);
  }
  return text
    .split('\n')
    .map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line))
    .filter((line) => line !== '');
}
