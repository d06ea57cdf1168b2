import type { AuditLog } from '../access/audit-log.js';
import { ClearanceConflictError } from '../common/errors.js';
import type { KeyRecord } from '../access/key-record.js';
import { answerAlways, type AdminAnswer, type DisputeRequest } from '../api/admin-requests.js';
import { conflict, notFound, validationError } from '../api/http-error.js';
import type { Logger } from '../common/logger.js';
import type { CorrectionDesk } from '../service/corrections.js';
import type { IntakeResult } from '../service/evidence-intake.js';
import type { ServedData } from '../service/served-data.js';
import { cursorOf, disputeIdOf, disputeInput, idempotencyKeyOf, resolutionInput, statusOf, type ResolutionInput } from './dispute-input.js';
import { newDisputeId, publicDispute, type Dispute } from './dispute-records.js';
import type { DisputeStore } from './dispute-store.js';
import { Reports } from './reports.js';

export interface DisputeServiceOptions {
  readonly store: DisputeStore;
  /** What is served: the verdict of a VPA now. */
  readonly served: ServedData;
  readonly audit: AuditLog;
  /** Store evidence as POST /v1/admin/evidence does (an accepted report). */
  readonly ingest: (body: Uint8Array) => Promise<IntakeResult>;
  /** What clears a VPA or retracts its evidence (the corrections desk of the data directory or of the store). */
  readonly desk: CorrectionDesk;
  readonly logger: Logger;
  readonly now?: () => number;
}

/**
 * The main thread's side of disputes and reports (docs/api.md, Disputes
 * and reports). A caller disputes a FLAGGED verdict (one open dispute per
 * key and VPA) and sees only its own disputes: another key's is answered
 * 404, as one that does not exist. An analyst resolves a dispute once:
 * upheld, the VPA is cleared (or the evidence named is retracted) through
 * the correction desk before the resolution is stored; each decision is in
 * the audit log. An answer is always given: a refusal as the API's error
 * body, a store that cannot be written as 503, with nothing acknowledged.
 */
export class DisputeService {
  readonly #o: DisputeServiceOptions;
  readonly #now: () => number;
  readonly #reports: Reports;

  constructor(options: DisputeServiceOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#reports = new Reports({ store: options.store, served: options.served, audit: options.audit, ingest: options.ingest, now: this.#now });
  }

  handle(request: DisputeRequest): Promise<AdminAnswer> {
    return answerAlways(
      () => this.#answer(request),
      (error) => this.#o.logger.error({ op: request.op, err: error.message }, 'dispute request failed'),
    );
  }

  close(): Promise<void> {
    return this.#o.store.close();
  }

  async #answer(request: DisputeRequest): Promise<AdminAnswer> {
    const { store } = this.#o;
    switch (request.op) {
      case 'dispute.open':
        return this.#open(request.key, request.body);
      case 'dispute.get': {
        const d = await store.dispute(disputeIdOf(request.id));
        // Another key's dispute is answered as one that does not exist: its existence is not told.
        if (d === null || d.owner !== request.key.id) throw notFound(`no dispute ${request.id}`);
        return ok(publicDispute(d));
      }
      case 'dispute.list': {
        const page = await store.disputes({ owner: request.key.id, status: null }, cursorOf(request.cursor, 'dispute'), request.limit);
        return ok({ disputes: page.items.map(publicDispute), next_cursor: page.next });
      }
      case 'dispute.list.all': {
        const page = await store.disputes({ owner: null, status: statusOf(request.status, 'dispute') }, cursorOf(request.cursor, 'dispute'), request.limit);
        return ok({ disputes: page.items, next_cursor: page.next });
      }
      case 'dispute.review': {
        const d = await store.dispute(disputeIdOf(request.id));
        if (d === null) throw notFound(`no dispute ${request.id}`);
        const view = this.#o.served.view;
        const evidence = await this.#o.desk.evidenceOf(d.upi);
        return ok({ dispute: d, verdict: view.verdict(d.upi), evidence, data_version: view.version });
      }
      case 'dispute.resolve':
        return this.#resolve(request.key, request.id, request.body);
      case 'report.create':
        return this.#reports.create(request.key, request.body, idempotencyKeyOf(request.idempotencyKey));
      case 'report.list':
        return this.#reports.list(request.status, request.cursor, request.limit);
      case 'report.accept':
        return this.#reports.accept(request.key, request.id, request.body);
      case 'report.dismiss':
        return this.#reports.dismiss(request.key, request.id, request.body);
    }
  }

  async #open(key: KeyRecord, body: unknown): Promise<AdminAnswer> {
    const input = disputeInput(body);
    if (this.#o.served.view.batchItem(input.upi).status === 'CLEARED') throw validationError(`${input.upi} is CLEARED: there is no verdict to dispute`);
    const now = this.#now();
    const dispute: Dispute = {
      id: newDisputeId(now),
      owner: key.id,
      ...input,
      status: 'OPEN',
      created_at: new Date(now).toISOString(),
      resolved_at: null,
      resolved_by: null,
      resolution_note: null,
      clearance_id: null,
      retracted: null,
    };
    const stored = await this.#o.store.openDispute(dispute);
    if (stored.id !== dispute.id) throw conflict(`this key has an open dispute of ${input.upi} already: ${stored.id}`, { dispute_id: stored.id });
    return { status: 201, body: JSON.stringify(publicDispute(stored)) };
  }

  /**
   * Resolve an open dispute once (409 after): the correction an upheld one
   * makes and its audit record come first, then the resolution is stored,
   * all with the dispute held against any other decision of it.
   */
  async #resolve(key: KeyRecord, id: string, body: unknown): Promise<AdminAnswer> {
    disputeIdOf(id);
    const input = resolutionInput(body);
    const desk = this.#o.desk;
    let dataVersion: string | null = null;
    const resolved = await this.#o.store.changeDispute(id, async (current) => {
      if (current.status !== 'OPEN') throw conflict(`dispute ${id} was ${current.status.toLowerCase()} already`, { dispute_id: id });
      const correction = input.outcome === 'upheld' ? await this.#correct(desk, current, input, key) : { clearance_id: null, retracted: null, data_version: null };
      dataVersion = correction.data_version;
      const next: Dispute = {
        ...current,
        status: input.outcome === 'upheld' ? 'UPHELD' : 'REJECTED',
        resolved_at: new Date(this.#now()).toISOString(),
        resolved_by: key.id,
        resolution_note: input.note,
        clearance_id: correction.clearance_id,
        retracted: correction.retracted,
      };
      const { clearance_id, retracted } = next;
      await this.#o.audit.append(
        { actor: { key_id: key.id, name: key.name }, action: 'dispute.resolved', target: id, details: { upi: next.upi, owner: next.owner, reason: next.reason, outcome: input.outcome, note: input.note, clearance_id, retracted } },
        new Date(this.#now()),
      );
      return next;
    });
    if (resolved === null) throw notFound(`no dispute ${id}`);
    return ok({ dispute: resolved, data_version: dataVersion });
  }

  /** Clear the VPA (unless a clearance is in force already), or retract the evidence named, which must be the VPA's. */
  async #correct(desk: CorrectionDesk, dispute: Dispute, input: ResolutionInput, key: KeyRecord): Promise<{ clearance_id: string | null; retracted: string[] | null; data_version: string }> {
    if (input.retract !== null) {
      // Items retracted already count as the VPA's: a resolution retried after its retraction was stored finds them so.
      const own = await desk.evidenceIdsOf(dispute.upi, input.retract);
      const foreign = input.retract.filter((evidenceId) => !own.has(evidenceId));
      if (foreign.length > 0) throw validationError(`not evidence of ${dispute.upi}: ${foreign.slice(0, 10).map((e) => JSON.stringify(e)).join(', ')}`);
      const outcome = await desk.retract(input.retract, `${dispute.reason}, dispute ${dispute.id}`, key.id);
      return { clearance_id: null, retracted: [...input.retract], data_version: outcome.data_version };
    }
    // Twice at most: a clearance made meanwhile (another dispute of the VPA upheld) serves this one too, once served
    // here; one that ended meanwhile leaves the VPA to clear again.
    for (let attempt = 1; ; attempt++) {
      const inForce = await desk.activeClearance(dispute.upi);
      if (inForce !== null) return { clearance_id: inForce.id, retracted: null, data_version: inForce.data_version };
      try {
        const made = await desk.clear({ upi: dispute.upi, reason: dispute.reason, reference: dispute.id }, key.id);
        return { clearance_id: made.id, retracted: null, data_version: made.data_version };
      } catch (error) {
        if (!(error instanceof ClearanceConflictError) || attempt === 2) throw error;
      }
    }
  }
}

function ok(value: unknown): AdminAnswer {
  return { status: 200, body: JSON.stringify(value) };
}
