import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { auditPage } from '../fixtures/console-audit.js';
import { until } from '../helpers.js';
import { closeTab, escapeRegExp, focusedElement, launchChromium, signedInTab, startConsoleServer, type ConsoleServer, type ConsoleTab } from '../fixtures/console-browser.js';

// The analysts' review in the console: disputes upheld (a clearance, or
// retraction of the evidence chosen) and rejected, reports accepted and
// dismissed, evidence retracted on Intelligence. Debian's Chromium drives the
// built app by role and accessible name against a real `serve` over TLS;
// what each decision did is checked through the API. Pages are screenshot
// into $UPI_RISK_SCREENSHOTS when it is set (`npm run screenshots`).

/** The VPAs of the evidence the server starts with, each FLAGGED, and what is done to each. */
const VPA = {
  upheld: 'shop.upheld@okaxis',
  rejected: 'shop.rejected@okaxis',
  /** Two evidence items: one is retracted by upholding its dispute, the other keeps it FLAGGED. */
  partial: 'shop.partial@okaxis',
  /** Its one evidence item is retracted on Intelligence. */
  retracted: 'shop.retracted@okaxis',
  /** A false_positive report opens a dispute of it, left open. */
  reported: 'shop.reported@okaxis',
} as const;
/** VPAs no evidence names (CLEARED): a confirmed_fraud report of each, accepted and dismissed. */
const FRAUD = { accepted: 'payee.accepted@ybl', dismissed: 'payee.dismissed@ybl' } as const;
const RETRACTED_ID = 'e2e-retracted-1';
const PARTIAL_IDS = ['e2e-partial-1', 'e2e-partial-2'] as const;

let service: ConsoleServer;
let browser: Browser;
const shots = process.env.UPI_RISK_SCREENSHOTS ?? '';
/** Report ids by VPA. */
const reports = new Map<string, string>();

before(async () => {
  const captured = new Date(Date.now() - 86_400_000).toISOString();
  const item = (evidenceId: string, upi: string, url: string) => ({ evidence_id: evidenceId, upi, url, source_category: 'scam', captured_at: captured });
  const items = [
    item('e2e-upheld-1', VPA.upheld, 'https://scam.example/upheld'),
    item('e2e-rejected-1', VPA.rejected, 'https://scam.example/rejected'),
    item(PARTIAL_IDS[0], VPA.partial, 'https://scam.example/partial-a'),
    item(PARTIAL_IDS[1], VPA.partial, 'https://scam.example/partial-b'),
    item(RETRACTED_ID, VPA.retracted, 'https://scam.example/retracted'),
    item('e2e-reported-1', VPA.reported, 'https://scam.example/reported'),
  ];
  service = await startConsoleServer((file) => writeFile(file, items.map((line) => `${JSON.stringify(line)}\n`).join('')));
  browser = await launchChromium();

  // A caller (a screen key) disputes three verdicts and sends three reports.
  const details: Readonly<Record<string, string>> = {
    [VPA.upheld]: 'Our merchant since 2019; KYC on file.',
    [VPA.rejected]: 'The payee says it is a legitimate shop.',
    [VPA.partial]: 'One of the pages named is not this shop’s.',
  };
  for (const [upi, text] of Object.entries(details)) {
    const opened = await callerPost('/v1/disputes', { upi, reason: 'not_fraud', details: text, reference: `CASE-${upi.split('@')[0]}` });
    assert.equal(opened.status, 201, JSON.stringify(opened.body));
  }
  for (const [upi, outcome] of [
    [FRAUD.accepted, 'confirmed_fraud'],
    [FRAUD.dismissed, 'confirmed_fraud'],
    [VPA.reported, 'false_positive'],
  ] as const) {
    const sent = await callerPost('/v1/reports', { upi, outcome, risk_category: outcome === 'confirmed_fraud' ? 'mule' : null, reference: `PAY-${upi.split('@')[0]}` });
    assert.equal(sent.status, 202, JSON.stringify(sent.body));
    reports.set(upi, String(sent.body.id));
  }
});

after(async () => {
  await browser?.close();
  await service?.stop();
});

function callerPost(path: string, body: unknown) {
  return service.request(path, { method: 'POST', key: service.screenKey, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

/** The verdict of `upi` now, through the API. */
async function verdict(upi: string): Promise<{ status: string; evidence_count: number }> {
  const answer = await service.request(`/v1/verify/upi?upi=${encodeURIComponent(upi)}`, { key: service.adminKey });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body as { status: string; evidence_count: number };
}

interface AdminDispute {
  readonly id: string;
  readonly upi: string;
  readonly status: string;
  readonly resolution_note: string | null;
  readonly clearance_id: string | null;
  readonly retracted: string[] | null;
}

/** Every dispute of `upi`, through the admin API. */
async function disputesOf(upi: string): Promise<AdminDispute[]> {
  const answer = await service.request('/v1/admin/disputes?limit=1000', { key: service.adminKey });
  return (answer.body.disputes as AdminDispute[]).filter((dispute) => dispute.upi === upi);
}

function signedIn(width?: number): Promise<ConsoleTab> {
  return signedInTab(browser, service.base, service.adminKey, width);
}

async function screenshot(page: Page, name: string): Promise<void> {
  if (shots !== '') await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

/** From the Disputes page, open the open dispute of `upi` by its link. */
async function openDispute(page: Page, upi: string): Promise<void> {
  await page.getByRole('link', { name: 'Disputes', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Disputes' }).waitFor();
  await page.getByRole('table', { name: /^Open disputes/ }).getByRole('link', { name: upi, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: `Dispute of ${upi}` }).waitFor();
}

describe('the review of disputes and reports in the console', () => {
  it('upholds a dispute from the queue: the VPA is cleared, and the page shows what was done', async () => {
    const tab = await signedIn();
    const { page } = tab;
    await page.getByRole('link', { name: 'Disputes', exact: true }).click();
    assert.equal(await focusedElement(page, 'H1 Disputes'), 'H1 Disputes', 'focus moves to the heading');
    const queue = page.getByRole('table', { name: /^Open disputes, newest first/ });
    await queue.waitFor();
    for (const upi of [VPA.upheld, VPA.rejected, VPA.partial, VPA.reported]) await queue.getByRole('link', { name: upi, exact: true }).waitFor();
    assert.match((await queue.getByRole('row', { name: new RegExp(escapeRegExp(VPA.upheld)) }).textContent()) ?? '', /KYC on file.*screening only/s);
    await screenshot(page, 'disputes');

    await openDispute(page, VPA.upheld);
    const facts = page.getByRole('region', { name: 'The dispute' });
    assert.match((await facts.textContent()) ?? '', /not_fraud.*Our merchant since 2019; KYC on file\..*CASE-shop\.upheld/s);
    await page.getByRole('region', { name: new RegExp(`${escapeRegExp(VPA.upheld)} FLAGGED`) }).waitFor();
    const evidence = page.getByRole('table', { name: `Evidence of ${VPA.upheld} (1)` });
    assert.match((await evidence.textContent()) ?? '', /e2e-upheld-1.*https:\/\/scam\.example\/upheld.*scam.*yes/s);
    await screenshot(page, 'dispute');

    await page.getByRole('textbox', { name: 'Note', exact: true }).fill('KYC checked: a registered merchant.');
    await page.getByRole('button', { name: 'Uphold', exact: true }).click();
    await page.getByRole('status').filter({ hasText: /^Upheld: / }).waitFor();
    assert.equal(await focusedElement(page, 'H2 Resolution'), 'H2 Resolution', 'focus moves to the resolution once the form is gone');
    // The review is loaded again: the verdict now.
    await page.getByRole('region', { name: new RegExp(`${escapeRegExp(VPA.upheld)} CLEARED`) }).waitFor();

    assert.equal((await verdict(VPA.upheld)).status, 'CLEARED');
    const [resolved] = await disputesOf(VPA.upheld);
    assert.equal(resolved?.status, 'UPHELD');
    assert.equal(resolved.resolution_note, 'KYC checked: a registered merchant.');
    assert.match(resolved.clearance_id ?? '', /^clr_/);
    const resolution = page.getByRole('region', { name: 'Resolution' });
    assert.match((await resolution.textContent()) ?? '', new RegExp(`UPHELD.*${resolved.clearance_id}`, 's'));
    await closeTab(tab);
  });

  it('rejects a dispute only with a note; the verdict stands and the queue moves it to Rejected', async () => {
    const tab = await signedIn();
    const { page } = tab;
    await openDispute(page, VPA.rejected);
    await page.getByRole('button', { name: 'Reject', exact: true }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.match((await alert.textContent()) ?? '', /note/i);
    assert.equal((await disputesOf(VPA.rejected))[0]?.status, 'OPEN', 'nothing was sent');

    await page.getByRole('textbox', { name: 'Note', exact: true }).fill('Three independent sightings on scam pages.');
    await page.getByRole('button', { name: 'Reject', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Rejected: the verdict stands.' }).waitFor();
    assert.equal((await verdict(VPA.rejected)).status, 'FLAGGED');
    assert.equal((await disputesOf(VPA.rejected))[0]?.status, 'REJECTED');

    await page.getByRole('link', { name: 'All disputes' }).click();
    await page.getByRole('table', { name: /^Open disputes/ }).getByRole('link', { name: VPA.partial, exact: true }).waitFor();
    assert.equal(await page.getByRole('link', { name: VPA.rejected, exact: true }).count(), 0, 'no longer open');
    await page.getByRole('combobox', { name: 'Status' }).selectOption('REJECTED');
    await page.getByRole('table', { name: /^Rejected disputes/ }).getByRole('link', { name: VPA.rejected, exact: true }).waitFor();
    await closeTab(tab);
  });

  it('upholds a dispute by retracting the evidence chosen instead of clearing the VPA', async () => {
    const tab = await signedIn();
    const { page } = tab;
    await openDispute(page, VPA.partial);
    await page.getByRole('checkbox', { name: `Retract ${PARTIAL_IDS[0]}` }).check();
    await page.getByText('Uphold retracts the evidence item chosen above instead').waitFor();
    await page.getByRole('textbox', { name: 'Note', exact: true }).fill('The first page belongs to another shop.');
    await page.getByRole('button', { name: 'Uphold', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Upheld: 1 evidence item retracted' }).waitFor();

    const now = await verdict(VPA.partial);
    assert.equal(now.status, 'FLAGGED', 'the other item still counts');
    assert.equal(now.evidence_count, 1);
    const [resolved] = await disputesOf(VPA.partial);
    assert.deepEqual(resolved?.retracted, [PARTIAL_IDS[0]]);
    assert.equal(resolved.clearance_id, null);
    await page.getByRole('table', { name: `Evidence of ${VPA.partial} (1)` }).getByText(PARTIAL_IDS[1]).waitFor();
    await closeTab(tab);
  });

  it('accepts a confirmed_fraud report (the VPA is FLAGGED) and dismisses another (nothing changes)', async () => {
    assert.equal((await verdict(FRAUD.accepted)).status, 'CLEARED');
    const tab = await signedIn();
    const { page } = tab;
    await page.getByRole('link', { name: 'Reports', exact: true }).click();
    assert.equal(await focusedElement(page, 'H1 Reports'), 'H1 Reports', 'focus moves to the heading');
    const queue = page.getByRole('table', { name: /^Received reports, newest first/ });
    await queue.waitFor();
    const row = (upi: string) => queue.getByRole('row', { name: new RegExp(escapeRegExp(upi)) });
    // A false_positive report opened a dispute, decided there: it cannot be accepted.
    const falsePositive = row(VPA.reported);
    assert.equal(await falsePositive.getByRole('button', { name: 'Accept', exact: true }).count(), 0);
    await falsePositive.getByRole('link', { name: /^dsp_/ }).waitFor();
    await screenshot(page, 'reports');

    await row(FRAUD.accepted).getByRole('button', { name: 'Accept', exact: true }).click();
    const outcome = page.getByRole('region', { name: 'Report accepted' });
    await outcome.waitFor();
    const evidenceId = `report:${reports.get(FRAUD.accepted)}`;
    assert.ok(((await outcome.textContent()) ?? '').includes(evidenceId), 'the evidence it became');
    assert.equal(await focusedElement(page, 'H2 Report accepted'), 'H2 Report accepted');
    const flagged = await verdict(FRAUD.accepted);
    assert.equal(flagged.status, 'FLAGGED');
    assert.equal(flagged.evidence_count, 1);

    await page.getByRole('textbox', { name: 'Decision note (optional)' }).fill('No payment reference to check.');
    await row(FRAUD.dismissed).getByRole('button', { name: 'Dismiss', exact: true }).click();
    await page.getByRole('region', { name: 'Report dismissed' }).waitFor();
    assert.equal((await verdict(FRAUD.dismissed)).status, 'CLEARED');
    const dismissed = await service.request('/v1/admin/reports?status=DISMISSED', { key: service.adminKey });
    const decided = (dismissed.body.reports as { id: string; decision_note: string | null }[]).find((report) => report.id === reports.get(FRAUD.dismissed));
    assert.equal(decided?.decision_note, 'No payment reference to check.');
    await row(FRAUD.dismissed).waitFor({ state: 'detached' });

    await page.getByRole('combobox', { name: 'Status' }).selectOption('ACCEPTED');
    const accepted = page.getByRole('table', { name: /^Accepted reports/ }).getByRole('row', { name: new RegExp(escapeRegExp(FRAUD.accepted)) });
    assert.ok(((await accepted.textContent()) ?? '').includes(evidenceId));
    await closeTab(tab);
  });

  it('retracts evidence on Intelligence, lists the clearance an upheld dispute made, and ends it', async () => {
    const tab = await signedIn();
    const { page } = tab;
    await page.getByRole('link', { name: 'Intelligence', exact: true }).click();
    await page.getByRole('textbox', { name: 'Evidence ids' }).fill(`${RETRACTED_ID}, e2e-no-such-item\n${RETRACTED_ID}`);
    await page.getByRole('textbox', { name: 'Reason' }).fill('The page was a parody.');
    await page.getByRole('button', { name: 'Retract', exact: true }).click();
    await page.getByRole('status').filter({ hasText: /^Retracted 1, served from data version / }).waitFor();
    assert.match((await page.getByRole('region', { name: 'Retract evidence' }).textContent()) ?? '', /Unknown ids\s*e2e-no-such-item/);
    assert.equal((await verdict(VPA.retracted)).status, 'CLEARED');
    const again = await service.request('/v1/admin/retractions', {
      method: 'POST',
      key: service.adminKey,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ evidence_ids: [RETRACTED_ID], reason: 'again' }),
    });
    assert.equal(again.body.already_retracted, 1, JSON.stringify(again.body));

    const clearance = page.getByRole('table', { name: /^Clearances in the order made/ }).getByRole('row', { name: new RegExp(escapeRegExp(VPA.upheld)) });
    assert.match((await clearance.textContent()) ?? '', /not_fraud.*in force/s);
    await clearance.getByRole('button', { name: 'End clearance' }).click();
    await page.getByRole('status').filter({ hasText: `The clearance of ${VPA.upheld} ended` }).waitFor();
    await until('its evidence counts again', 5000, async () => (await verdict(VPA.upheld)).status === 'FLAGGED');
    // The list is read again after the message: its row loses the button once it has been.
    await until('the ended clearance offers no End clearance', 5000, async () => (await clearance.getByRole('button', { name: 'End clearance' }).count()) === 0);
    await closeTab(tab);
  });

  it('tells a session whose key lacks the ingest scope that retractions need it', async () => {
    const created = await service.request('/v1/admin/keys', {
      method: 'POST',
      key: service.adminKey,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'e2e analyst', scopes: ['screen', 'admin'] }),
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const tab = await signedInTab(browser, service.base, String(created.body.key));
    const { page } = tab;
    await page.getByRole('link', { name: 'Intelligence', exact: true }).click();
    await page.getByText('This session’s key has no ingest scope').waitFor();
    await page.getByRole('textbox', { name: 'Evidence ids' }).fill(PARTIAL_IDS[1]);
    await page.getByRole('textbox', { name: 'Reason' }).fill('A try without the scope.');
    await page.getByRole('button', { name: 'Retract', exact: true }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.match((await alert.textContent()) ?? '', /"ingest" scope/);
    assert.equal((await verdict(VPA.partial)).evidence_count, 1, 'nothing retracted');
    await closeTab(tab);
  });
});

describe('the review pages by keyboard, at 1280 and 320 px wide (WCAG 2.2 reflow)', () => {
  for (const width of [1280, 320]) {
    it(`pass axe-core at ${width} px, without sideways scroll, with a focus indicator of 3:1 or more`, async () => {
      const fresh = `payee.a11y${width}@ybl`;
      const sent = await callerPost('/v1/reports', { upi: fresh, outcome: 'confirmed_fraud' });
      assert.equal(sent.status, 202, JSON.stringify(sent.body));
      const tab = await signedIn(width);
      const { page } = tab;
      const faults: string[] = [];
      const check = async (state: string) => {
        faults.push(...(await auditPage(page, width, state)));
      };

      await page.getByRole('link', { name: 'Disputes', exact: true }).click();
      await page.getByRole('table', { name: /^Open disputes/ }).waitFor();
      await check('disputes');
      await openDispute(page, VPA.reported);
      await page.getByRole('table', { name: /^Evidence of/ }).waitFor();
      await page.getByRole('button', { name: 'Uphold', exact: true }).click();
      await page.getByRole('alert').waitFor();
      await check('a dispute, open, a note missing');

      await page.getByRole('link', { name: 'All disputes' }).click();
      await page.getByRole('combobox', { name: 'Status' }).selectOption('UPHELD');
      await page.getByRole('table', { name: /^Upheld disputes/ }).getByRole('link', { name: VPA.partial, exact: true }).click();
      await page.getByRole('region', { name: 'Resolution' }).waitFor();
      await check('a dispute, upheld');

      await page.getByRole('link', { name: 'Reports', exact: true }).click();
      const row = page.getByRole('row', { name: new RegExp(escapeRegExp(fresh)) });
      await row.waitFor();
      await check('reports');
      await row.getByRole('button', { name: 'Dismiss', exact: true }).click();
      await page.getByRole('region', { name: 'Report dismissed' }).waitFor();
      await page.getByRole('combobox', { name: 'Status' }).selectOption({ label: 'All' });
      await page.getByRole('table', { name: /^Every report/ }).waitFor();
      await check('reports, one dismissed, every status');

      await page.getByRole('link', { name: 'Intelligence', exact: true }).click();
      await page.getByRole('textbox', { name: 'Evidence ids' }).fill('e2e-no-such-item');
      await page.getByRole('textbox', { name: 'Reason' }).fill('An id no evidence has.');
      await page.getByRole('button', { name: 'Retract', exact: true }).click();
      await page.getByRole('status').filter({ hasText: /^Retracted 0/ }).waitFor();
      await page.getByRole('table', { name: /^Clearances/ }).waitFor();
      await check('intelligence, a retraction and the clearances');

      assert.deepEqual(faults, [], `accessibility faults at ${width} px:\n${faults.join('\n')}`);
      await closeTab(tab);
    });
  }
});
