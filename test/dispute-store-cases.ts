/**
 * The rules every DisputeStore keeps, as one suite run against each: the
 * data directory's journal (test/unit/file-dispute-store.test.ts) and the
 * fleet store's tables (test/process/fleet-disputes.test.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { DisputeStore } from '../src/corrections/dispute-store.js';
import { newDisputeId, newReportId, type Dispute, type Report } from '../src/corrections/dispute-records.js';

export const KEY_A = 'key_aaaaaaaaaaaa';
export const KEY_B = 'key_bbbbbbbbbbbb';

let clock = Date.parse('2026-11-28T09:00:00Z');

/** An open dispute of `upi` by `owner`, each one a millisecond after the one before. */
export function openDisputeOf(owner: string, upi: string): Dispute {
  const at = clock++;
  return {
    id: newDisputeId(at),
    owner,
    upi,
    status: 'OPEN',
    reason: 'not_fraud',
    details: 'our merchant',
    reference: null,
    created_at: new Date(at).toISOString(),
    resolved_at: null,
    resolved_by: null,
    resolution_note: null,
    clearance_id: null,
    retracted: null,
  };
}

export function receivedReportOf(owner: string, upi: string): Report {
  const at = clock++;
  return {
    id: newReportId(at),
    owner,
    upi,
    outcome: 'confirmed_fraud',
    risk_category: 'mule',
    occurred_at: null,
    reference: 'PAY-1',
    created_at: new Date(at).toISOString(),
    status: 'RECEIVED',
    dispute_id: null,
    decided_at: null,
    decided_by: null,
    decision_note: null,
    evidence_id: null,
  };
}

export function rejected(d: Dispute): Dispute {
  return { ...d, status: 'REJECTED', resolved_at: new Date(clock++).toISOString(), resolved_by: KEY_B, resolution_note: 'the evidence stands' };
}

/** Register the suite; `open` gives a fresh, empty store and `close` ends it. */
export function disputeStoreCases(name: string, open: () => Promise<DisputeStore>): void {
  const withStore = (title: string, body: (store: DisputeStore) => Promise<void>): void => {
    test(`${name}: ${title}`, async () => {
      const store = await open();
      try {
        await body(store);
      } finally {
        await store.close();
      }
    });
  };

  withStore('one open dispute per key and VPA, even when opened at once; another key has its own', async (store) => {
    const tries = Array.from({ length: 6 }, () => openDisputeOf(KEY_A, 'shop@ybl'));
    const stored = await Promise.all(tries.map((d) => store.openDispute(d)));
    assert.equal(new Set(stored.map((d) => d.id)).size, 1);
    assert.ok(tries.some((d) => d.id === stored[0]!.id));
    const other = openDisputeOf(KEY_B, 'shop@ybl');
    assert.equal((await store.openDispute(other)).id, other.id);
    assert.equal((await store.disputes({ owner: null, status: null }, null, 10)).items.length, 2);
    // Resolved, the VPA may be disputed again by the same key.
    await store.changeDispute(stored[0]!.id, async (d) => rejected(d));
    const again = openDisputeOf(KEY_A, 'shop@ybl');
    assert.equal((await store.openDispute(again)).id, again.id);
  });

  withStore('a change runs with the record held: changes of one record one after another, a refused one stores nothing', async (store) => {
    const d = await store.openDispute(openDisputeOf(KEY_A, 'held@ybl'));
    const order: string[] = [];
    let entered: () => void = () => {};
    const holding = new Promise<void>((resolve) => (entered = resolve));
    const slow = store.changeDispute(d.id, async (current) => {
      order.push(`slow saw ${current.status}`);
      entered();
      await new Promise((resolve) => setTimeout(resolve, 50));
      return rejected(current);
    });
    // Asked for once the first change holds the record: it must wait for it, and see what it stored.
    await holding;
    const second = store.changeDispute(d.id, async (current) => {
      order.push(`second saw ${current.status}`);
      if (current.status !== 'OPEN') throw new Error('decided already');
      return current;
    });
    // Its refusal is awaited from now: it may come before the first change's answer does.
    const secondRefused = assert.rejects(second, /decided already/);
    assert.equal((await slow)?.status, 'REJECTED');
    await secondRefused;
    assert.deepEqual(order, ['slow saw OPEN', 'second saw REJECTED']);
    assert.equal((await store.dispute(d.id))?.resolution_note, 'the evidence stands');
    assert.equal(await store.changeDispute(newDisputeId(clock++), () => assert.fail('run for no dispute')), null);

    const r = receivedReportOf(KEY_A, 'held@ybl');
    await store.addReport(r);
    await assert.rejects(store.changeReport(r.id, () => Promise.reject(new Error('refused'))), /refused/);
    assert.equal((await store.report(r.id))?.status, 'RECEIVED');
    const accepted = await store.changeReport(r.id, async (current) => ({ ...current, status: 'ACCEPTED', evidence_id: `report:${r.id}` }));
    assert.equal(accepted?.status, 'ACCEPTED');
    assert.deepEqual(await store.report(r.id), accepted);
  });

  withStore('one report per key and Idempotency-Key, even when stored at once; another key has its own', async (store) => {
    const tries = Array.from({ length: 6 }, () => receivedReportOf(KEY_A, 'payee@ybl'));
    const stored = await Promise.all(tries.map((r) => store.addReport(r, 'pay-31-retry')));
    assert.equal(new Set(stored.map((r) => r.id)).size, 1);
    assert.ok(tries.some((r) => r.id === stored[0]!.id));
    assert.deepEqual(await store.reportByIdempotencyKey(KEY_A, 'pay-31-retry'), stored[0]);
    assert.equal(await store.reportByIdempotencyKey(KEY_B, 'pay-31-retry'), null);
    const theirs = receivedReportOf(KEY_B, 'payee@ybl');
    assert.equal((await store.addReport(theirs, 'pay-31-retry')).id, theirs.id);
    // A change keeps the key's report; reports without a key are each stored.
    await store.changeReport(stored[0]!.id, async (current) => ({ ...current, status: 'DISMISSED' }));
    assert.equal((await store.addReport(receivedReportOf(KEY_A, 'payee@ybl'), 'pay-31-retry')).status, 'DISMISSED');
    await store.addReport(receivedReportOf(KEY_A, 'payee@ybl'));
    await store.addReport(receivedReportOf(KEY_A, 'payee@ybl'), null);
    assert.equal((await store.reports({ owner: KEY_A, status: null }, null, 10)).items.length, 3);
  });

  withStore('pages newest first, by owner and status, with a cursor', async (store) => {
    const made: Dispute[] = [];
    for (let i = 0; i < 7; i++) made.push(await store.openDispute(openDisputeOf(i % 2 === 0 ? KEY_A : KEY_B, `m${i}@ybl`)));
    await store.changeDispute(made[2]!.id, async (d) => rejected(d));
    const ids = (page: { items: { id: string }[] }) => page.items.map((d) => d.id);
    const first = await store.disputes({ owner: KEY_A, status: null }, null, 3);
    assert.deepEqual(ids(first), [made[6]!.id, made[4]!.id, made[2]!.id]);
    assert.equal(first.next, made[2]!.id);
    const last = await store.disputes({ owner: KEY_A, status: null }, first.next, 3);
    assert.deepEqual(ids(last), [made[0]!.id]);
    assert.equal(last.next, null);
    assert.deepEqual(ids(await store.disputes({ owner: null, status: 'REJECTED' }, null, 10)), [made[2]!.id]);
    assert.equal((await store.disputes({ owner: null, status: 'OPEN' }, null, 10)).items.length, 6);
    const exact = await store.disputes({ owner: KEY_B, status: null }, null, 3);
    assert.equal(exact.items.length, 3);
    assert.equal(exact.next, null, 'no page after the last, even when it is full');

    const reports: Report[] = [];
    for (let i = 0; i < 3; i++) {
      reports.push(receivedReportOf(KEY_A, `r${i}@ybl`));
      await store.addReport(reports[i]!);
    }
    assert.deepEqual(ids(await store.reports({ owner: null, status: 'RECEIVED' }, reports[2]!.id, 10)), [reports[1]!.id, reports[0]!.id]);
    assert.equal(await store.dispute('dsp_0000000000000000000000000000'), null);
    assert.equal(await store.report(reports[0]!.id.replace('rep_', 'rep_f')), null);
  });
}
