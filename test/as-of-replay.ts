import assert from 'node:assert/strict';
import { evidence } from './helpers.js';

/**
 * The replay tests of answers as of a past instant (process/answers-as-of,
 * process/fleet-answers-as-of): real answers recorded between randomized
 * ingests and corrections, then told again byte for byte with `as_of`.
 */

export const PAYEES = ['payee@ybl', 'mate@ybl', 'other@okaxis', 'merchant@paytm', 'late@ibl'];
export const PAGES = ['https://pages.example/a', 'https://pages.example/b', 'https://pages.example/c'];

export interface Answered {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

export type Call = (path: string, options?: { method?: string; body?: string; type?: string }) => Promise<Answered>;

/** Calls to whichever server `base()` names now, with `key`. */
export function caller(base: () => string, key: string): Call {
  return async (path, options = {}) => {
    const response = await fetch(`${base()}${path}`, {
      method: options.method ?? 'GET',
      headers: { authorization: `Bearer ${key}`, ...(options.body === undefined ? {} : { 'content-type': options.type ?? 'application/json' }) },
      ...(options.body === undefined ? {} : { body: options.body }),
    });
    return { status: response.status, headers: response.headers, text: await response.text() };
  };
}

interface Recorded {
  readonly at: number;
  readonly upi: string;
  readonly body: string;
  readonly version: string | null;
  readonly asOf: string | null;
}

/** Answers recorded as a caller keeps them: each PAYEE alone, then all in a batch, with their instants and headers. */
export class RecordedAnswers {
  readonly single: Recorded[] = [];
  readonly batches: { at: number; body: string; version: string | null }[] = [];

  async record(call: Call): Promise<void> {
    for (const upi of PAYEES) {
      const answer = await call(`/v1/verify/upi?upi=${upi}`);
      assert.equal(answer.status, 200);
      this.single.push({ at: Date.now(), upi, body: answer.text, version: answer.headers.get('x-data-version'), asOf: answer.headers.get('x-data-as-of') });
    }
    const batch = await call('/v1/verify/upi/batch', { method: 'POST', body: JSON.stringify({ upis: PAYEES }) });
    this.batches.push({ at: Date.now(), body: batch.text, version: batch.headers.get('x-data-version') });
  }

  /** Every answer recorded, told again by `call` as of its instant: the same body and headers. */
  async assertToldAgain(call: Call, context: string): Promise<void> {
    assert.ok(new Set(this.single.map((r) => r.body)).size >= 4, `the run changed answers (${context})`);
    for (const r of this.single) {
      const iso = new Date(r.at).toISOString();
      const past = await call(`/v1/verify/upi?upi=${r.upi}&as_of=${encodeURIComponent(iso)}`);
      assert.equal(past.status, 200, `${r.upi} as of ${iso}: ${past.text} (${context})`);
      assert.equal(past.text, r.body, `${r.upi} as of ${iso} (${context})`);
      assert.equal(past.headers.get('x-data-version'), r.version, `the version of ${r.upi} as of ${iso}`);
      assert.equal(past.headers.get('x-data-as-of'), r.asOf);
      assert.equal(past.headers.get('x-as-of'), iso, 'the instant asked for, echoed');
    }
    for (const b of this.batches) {
      const iso = new Date(b.at).toISOString();
      const past = await call('/v1/verify/upi/batch', { method: 'POST', body: JSON.stringify({ upis: PAYEES, as_of: iso }) });
      assert.equal(past.status, 200, past.text);
      assert.equal(past.text, b.body, `the batch as of ${iso}`);
      assert.equal(past.headers.get('x-data-version'), b.version);
    }
  }
}

/**
 * The changes of intelligence a replay draws from: with `roll` below 0.65,
 * new evidence (0.4), a retraction (0.1) or a clearance made or ended
 * (0.15), made through `call` and named in `steps`; returns false for a
 * roll above, which the test makes its own steps of.
 */
export class IntelligenceChanges {
  #evidenceId = 10;
  readonly #clearances = new Map<string, string>();
  readonly steps: string[] = [];
  readonly #next: () => number;

  constructor(next: () => number) {
    this.#next = next;
  }

  async make(roll: number, call: Call): Promise<boolean> {
    const next = this.#next;
    if (roll < 0.4) {
      const items = Array.from({ length: 1 + Math.floor(next() * 3) }, () =>
        evidence(PAYEES[Math.floor(next() * PAYEES.length)]!, PAGES[Math.floor(next() * PAGES.length)]!, { evidence_id: `ev-${this.#evidenceId++}` }),
      );
      const sent = await call('/v1/admin/evidence', { method: 'POST', type: 'application/x-ndjson', body: items.map((i) => `${JSON.stringify(i)}\n`).join('') });
      assert.equal(sent.status, 200, sent.text);
      this.steps.push('evidence');
    } else if (roll < 0.5 && this.#evidenceId > 10) {
      const id = `ev-${10 + Math.floor(next() * (this.#evidenceId - 10))}`;
      const retracted = await call('/v1/admin/retractions', { method: 'POST', body: JSON.stringify({ evidence_ids: [id], reason: 'the page named another payee' }) });
      assert.ok([200, 409].includes(retracted.status), retracted.text);
      this.steps.push('retraction');
    } else if (roll < 0.65) {
      const upi = PAYEES[Math.floor(next() * PAYEES.length)]!;
      const id = this.#clearances.get(upi);
      if (id === undefined) {
        const made = await call('/v1/admin/clearances', { method: 'POST', body: JSON.stringify({ upi, reason: 'a merchant we know' }) });
        assert.equal(made.status, 201, made.text);
        this.#clearances.set(upi, String((JSON.parse(made.text) as { id: string }).id));
        this.steps.push('clearance');
      } else {
        assert.equal((await call(`/v1/admin/clearances/${id}`, { method: 'DELETE' })).status, 200);
        this.#clearances.delete(upi);
        this.steps.push('clearance ended');
      }
    } else {
      return false;
    }
    return true;
  }
}
