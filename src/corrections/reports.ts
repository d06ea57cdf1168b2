import type { AuditActor, AuditLog } from '../access/audit-log.js';
import type { KeyRecord } from '../access/key-record.js';
import type { AdminAnswer } from '../api/admin-requests.js';
import { conflict, notFound, validationError } from '../api/http-error.js';
import type { IntakeResult } from '../service/evidence-intake.js';
import type { ServedData } from '../service/served-data.js';
import type { RiskCategory, SourceCategory } from '../vpa/categories.js';
import { cursorOf, decisionNote, reportIdOf, reportInput, statusOf, type ReportInput } from './dispute-input.js';
import { newDisputeId, newReportId, type Dispute, type Report } from './dispute-records.js';
import type { DisputeStore } from './dispute-store.js';

/** The risk category of an accepted report that names none. */
export const DEFAULT_REPORT_RISK: RiskCategory = 'scam';

/** What reports are handled with (the dispute service's own). */
export interface ReportContext {
  readonly store: DisputeStore;
  readonly served: ServedData;
  readonly audit: AuditLog;
  /** Store evidence as POST /v1/admin/evidence does, and wait until it is served. */
  readonly ingest: (body: Uint8Array) => Promise<IntakeResult>;
  readonly now: () => number;
}

/**
 * Reports (docs/api.md, Disputes and reports): what a caller says happened
 * after a payment. A report never changes a verdict by itself: a
 * `false_positive` report of a FLAGGED VPA opens a dispute (or joins the
 * caller's open one), and a `confirmed_fraud` report waits for an analyst,
 * who may accept it as one evidence item or dismiss it.
 */
export class Reports {
  readonly #c: ReportContext;

  constructor(context: ReportContext) {
    this.#c = context;
  }

  /**
   * Receive a report. With an Idempotency-Key, a retry (same key, same
   * report) is answered as the first was, and nothing more is stored or
   * opened; the same Idempotency-Key with another report is refused (422).
   *
   * The report is stored before its dispute is opened, so the key is taken
   * first: of two reports sent at once under one key, the one refused has
   * opened nothing. A try that stopped between the two (a crash, a store
   * that failed) leaves the report without its dispute, and the caller's
   * retry opens it.
   */
  async create(key: KeyRecord, body: unknown, idempotencyKey: string | null = null): Promise<AdminAnswer> {
    const now = this.#c.now();
    const input = reportInput(body, now);
    if (idempotencyKey !== null) {
      const earlier = await this.#c.store.reportByIdempotencyKey(key.id, idempotencyKey);
      if (earlier !== null) return this.#receivedAgain(earlier, input, idempotencyKey);
    }
    const report: Report = {
      id: newReportId(now),
      owner: key.id,
      ...input,
      created_at: new Date(now).toISOString(),
      status: 'RECEIVED',
      dispute_id: null,
      decided_at: null,
      decided_by: null,
      decision_note: null,
      evidence_id: null,
    };
    const stored = await this.#c.store.addReport(report, idempotencyKey);
    // Another try under the key stored first: answered as that one is, if it is this report.
    if (stored.id !== report.id) return this.#receivedAgain(stored, input, idempotencyKey!);
    await this.#openDispute(stored);
    return received(stored.id);
  }

  /** The answer to a retry of the report stored with `idempotencyKey` (the first answer, for the same report only), its dispute opened if the first try did not get to it. */
  async #receivedAgain(stored: Report, input: ReportInput, idempotencyKey: string): Promise<AdminAnswer> {
    const answer = receivedAgain(stored, input, idempotencyKey);
    await this.#openDispute(stored);
    return answer;
  }

  /**
   * A received false_positive report of a FLAGGED VPA opens its owner's
   * dispute of the VPA, or joins the one open, and names it. Nothing for
   * another report, nor for one that names its dispute already.
   */
  async #openDispute(report: Report): Promise<void> {
    if (report.outcome !== 'false_positive' || report.status !== 'RECEIVED' || report.dispute_id !== null) return;
    if (this.#c.served.view.batchItem(report.upi).status !== 'FLAGGED') return;
    const dispute: Dispute = {
      id: newDisputeId(this.#c.now()),
      owner: report.owner,
      upi: report.upi,
      status: 'OPEN',
      reason: 'not_fraud',
      details: openedBy(report.id),
      reference: report.reference,
      created_at: new Date(this.#c.now()).toISOString(),
      resolved_at: null,
      resolved_by: null,
      resolution_note: null,
      clearance_id: null,
      retracted: null,
    };
    const named = (await this.#c.store.openDispute(dispute)).id;
    await this.#c.store.changeReport(report.id, (r) => Promise.resolve(r.dispute_id === null ? { ...r, dispute_id: named } : r));
  }

  async list(status: string | null, cursor: string | null, limit: number): Promise<AdminAnswer> {
    const page = await this.#c.store.reports({ owner: null, status: statusOf(status, 'report') }, cursorOf(cursor, 'report'), limit);
    return { status: 200, body: JSON.stringify({ reports: page.items, next_cursor: page.next }) };
  }

  /** Store the report as one evidence item (as POST /v1/admin/evidence would), served before the answer. */
  async accept(key: KeyRecord, id: string, body: unknown): Promise<AdminAnswer> {
    const note = decisionNote(body);
    let dataVersion: string | null = null;
    const report = await this.#decide(reportIdOf(id), async (current) => {
      if (current.outcome !== 'confirmed_fraud') throw validationError('only a confirmed_fraud report becomes evidence; a false_positive one goes through its dispute');
      const item = reportEvidence(current);
      const result = await this.#c.ingest(Buffer.from(`${JSON.stringify(item)}\n`));
      if (result.kind !== 'stored') throw new Error(`the evidence of report ${current.id} was not stored (${result.kind})`);
      dataVersion = result.dataVersion;
      const decided = this.#decided(current, 'ACCEPTED', key, note, item.evidence_id);
      await this.#audit(key, 'report.accepted', decided, { evidence_id: item.evidence_id, risk_category: item.risk_category });
      return decided;
    });
    return { status: 200, body: JSON.stringify({ report, data_version: dataVersion }) };
  }

  async dismiss(key: KeyRecord, id: string, body: unknown): Promise<AdminAnswer> {
    const note = decisionNote(body);
    const report = await this.#decide(reportIdOf(id), async (current) => {
      const decided = this.#decided(current, 'DISMISSED', key, note, null);
      await this.#audit(key, 'report.dismissed', decided, {});
      return decided;
    });
    return { status: 200, body: JSON.stringify({ report, data_version: null }) };
  }

  /** Decide a received report once: a decided one is 409, an unknown one 404. */
  async #decide(id: string, decide: (current: Report) => Promise<Report>): Promise<Report> {
    const decided = await this.#c.store.changeReport(id, (current) => {
      if (current.status !== 'RECEIVED') throw conflict(`report ${id} was ${current.status.toLowerCase()} already`, { report_id: id });
      return decide(current);
    });
    if (decided === null) throw notFound(`no report ${id}`);
    return decided;
  }

  #decided(current: Report, status: 'ACCEPTED' | 'DISMISSED', key: KeyRecord, note: string | null, evidenceId: string | null): Report {
    return { ...current, status, decided_at: new Date(this.#c.now()).toISOString(), decided_by: key.id, decision_note: note, evidence_id: evidenceId };
  }

  async #audit(key: KeyRecord, action: 'report.accepted' | 'report.dismissed', report: Report, details: Record<string, unknown>): Promise<void> {
    const actor: AuditActor = { key_id: key.id, name: key.name };
    await this.#c.audit.append({ actor, action, target: report.id, details: { upi: report.upi, outcome: report.outcome, note: report.decision_note, ...details } }, new Date(this.#c.now()));
  }
}

/** The details of a dispute a false_positive report opened. */
function openedBy(reportId: string): string {
  return `opened by false_positive report ${reportId}`;
}

/** The answer to a report received. */
function received(id: string): AdminAnswer {
  return { status: 202, body: JSON.stringify({ id, status: 'RECEIVED' }) };
}

/** The answer to a retry of the report stored with `idempotencyKey`: the first answer, for the same report only. */
function receivedAgain(stored: Report, input: ReportInput, idempotencyKey: string): AdminAnswer {
  const same = stored.upi === input.upi && stored.outcome === input.outcome && stored.risk_category === input.risk_category && stored.occurred_at === input.occurred_at && stored.reference === input.reference;
  if (!same) throw validationError(`the Idempotency-Key ${JSON.stringify(idempotencyKey)} was sent with another report (${stored.id}); a new report needs a new key`);
  return received(stored.id);
}

/**
 * The evidence item an accepted report becomes, in the ingestion contract
 * (docs/evidence.md): its id and url are `report:<report id>`, its risk
 * category the reported one (DEFAULT_REPORT_RISK when none), captured when
 * the caller said it occurred (else when it was reported), and its source
 * category the kind of page that category is usually seen on.
 */
export function reportEvidence(report: Report): { evidence_id: string; upi: string; url: string; source_category: SourceCategory; risk_category: RiskCategory; captured_at: string; screenshot_available: false } {
  const risk = report.risk_category ?? DEFAULT_REPORT_RISK;
  return {
    evidence_id: `report:${report.id}`,
    upi: report.upi,
    url: `report:${report.id}`,
    source_category: risk === 'gambling' || risk === 'phishing' ? risk : 'scam',
    risk_category: risk,
    captured_at: report.occurred_at ?? report.created_at,
    screenshot_available: false,
  };
}
