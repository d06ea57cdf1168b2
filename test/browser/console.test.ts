import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { recommendedAction } from '../../src/api/advice.js';
import { writeDemoData } from '../../src/demo/generator.js';
import { auditPage } from '../fixtures/console-audit.js';
import {
  closeTab,
  escapeRegExp,
  focusedElement,
  launchChromium,
  openTab,
  signIn,
  signedInTab,
  startConsoleServer,
  type ConsoleServer,
  type ConsoleTab,
} from '../fixtures/console-browser.js';
import { until } from '../helpers.js';
import { startReceiver } from '../webhook-receiver.js';

// The console end to end: Debian's Chromium driving the built app, by role
// and accessible name, against a real `serve` process over TLS. Every page
// is screenshot into $UPI_RISK_SCREENSHOTS (`npm run screenshots` names
// docs/screenshots), else into a temporary folder removed afterwards.

let service: ConsoleServer;
let browser: Browser;
let shots: string;
let ownShots = false;
/** A VPA the demo evidence names, so FLAGGED. */
let flaggedVpa: string;

before(async () => {
  // Webhooks may reach the test's receiver on 127.0.0.1 and are retried within a second.
  service = await startConsoleServer((file) => writeDemoData({ vpas: 1500, seed: 11 }, file), ['--webhook-allow', '127.0.0.1', '--webhook-first-retry-seconds', '1']);
  const evidence = await readFile(service.evidenceFile, 'utf8');
  flaggedVpa = (JSON.parse(evidence.slice(0, evidence.indexOf('\n'))) as { upi: string }).upi.toLowerCase();
  const page = await service.request('/console/');
  assert.equal(page.status, 200, 'the server answers the console at /console/');
  browser = await launchChromium();
  shots = process.env.UPI_RISK_SCREENSHOTS ?? '';
  if (shots === '') {
    shots = await mkdtemp(join(tmpdir(), 'upi-risk-screenshots-'));
    ownShots = true;
  }
});

after(async () => {
  await browser?.close();
  await service?.stop();
  if (ownShots) await rm(shots, { recursive: true, force: true });
});

function openConsole(width?: number): Promise<ConsoleTab> {
  return openTab(browser, width);
}

function signedIn(): Promise<ConsoleTab> {
  return signedInTab(browser, service.base, service.adminKey);
}

function close(session: ConsoleTab): Promise<void> {
  return closeTab(session);
}

async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

/** Status of a lookup with `key` from Node. */
async function lookupStatus(key: string): Promise<number> {
  return (await service.request(`/v1/verify/upi?upi=${encodeURIComponent(flaggedVpa)}`, { key })).status;
}

describe('the console', () => {
  it('signs in with an admin key, keeping the key nowhere', async () => {
    const session = await openConsole();
    const { page } = session;
    await page.goto(`${service.base}/console/`);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await screenshot(page, 'sign-in');

    await page.getByRole('textbox', { name: 'API key' }).fill('upirisk_not-a-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    assert.equal(await page.getByRole('textbox', { name: 'API key' }).inputValue(), '', 'the field is cleared after a failed sign-in');

    await page.getByRole('textbox', { name: 'API key' }).fill(service.adminKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    for (const name of ['Keys', 'Screen', 'Clusters', 'Intelligence', 'Watchlists', 'Disputes', 'Reports']) await page.getByRole('link', { name, exact: true }).waitFor();
    // A string, evaluated in the page (this project's types have no DOM).
    const kept = await page.evaluate<string>('JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage }, url: location.href, cookie: document.cookie })');
    assert.equal(kept.includes(service.adminKey), false, `the key is kept: ${kept}`);
    const cookies = await session.context.cookies();
    const cookie = cookies.find((c) => c.name === '__Host-upi_risk_session');
    assert.ok(cookie !== undefined, 'the session cookie is set');
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.secure, true);
    assert.equal(cookie.sameSite, 'Strict');

    // A reload asks the server for the session again.
    await page.reload();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await close(session);
  });

  it('refuses a key without the admin scope, saying so', async () => {
    const session = await openConsole();
    const { page } = session;
    await signIn(page, service.base, service.screenKey);
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.match((await alert.textContent()) ?? '', /admin/i);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await close(session);
  });

  it('creates a key, shows it once and it works; rotating stops the old one; revoking stops the new one', async () => {
    const session = await signedIn();
    const { page } = session;
    await page.getByRole('link', { name: 'Keys', exact: true }).click();
    await page.getByRole('textbox', { name: 'Name' }).fill('e2e partner');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByText('You will not see this key again').waitFor();
    const created = await page.getByRole('textbox', { name: 'New API key' }).inputValue();
    assert.match(created, /^upirisk_/);
    await page.getByRole('button', { name: 'Copy' }).click();
    await until('the created key accepted', 5000, async () => (await lookupStatus(created)) === 200);
    await screenshot(page, 'keys');

    const row = page.getByRole('row', { name: /e2e partner/ });
    await row.getByRole('combobox', { name: 'Plan' }).selectOption({ index: 1 });
    await page.getByRole('cell', { name: 'plan changed' }).first().waitFor();

    await row.getByRole('button', { name: 'Rotate', exact: true }).click();
    await page.getByRole('heading', { name: /Rotated key for/ }).waitFor();
    const rotated = await page.getByRole('textbox', { name: 'New API key' }).inputValue();
    assert.notEqual(rotated, created);
    await until('the rotated key in force', 5000, async () => (await lookupStatus(created)) === 401 && (await lookupStatus(rotated)) === 200);

    await row.getByRole('button', { name: 'Revoke', exact: true }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Confirm revoke' }).click();
    await page.getByRole('cell', { name: 'key revoked' }).first().waitFor();
    await until('the revoked key refused', 5000, async () => (await lookupStatus(rotated)) === 401);
    assert.equal(await row.getByRole('button', { name: 'Rotate', exact: true }).count(), 0, 'a revoked key has no actions');
    await close(session);
  });

  it('screens one VPA: every field, the recommended actions, sources as safe links, the request id', async () => {
    const session = await signedIn();
    const { page } = session;
    const expected = await service.request(`/v1/verify/upi?upi=${encodeURIComponent(flaggedVpa)}`, { key: service.adminKey });
    assert.equal(expected.body.status, 'FLAGGED');
    const confidence = expected.body.confidence as number;

    await page.getByRole('link', { name: 'Screen', exact: true }).click();
    await page.getByRole('textbox', { name: 'VPA', exact: true }).fill(flaggedVpa);
    await page.getByRole('button', { name: 'Look up' }).click();
    const verdict = page.getByRole('region', { name: new RegExp(`${escapeRegExp(flaggedVpa)} FLAGGED`) });
    await verdict.waitFor();
    const text = (await verdict.textContent()) ?? '';
    for (const field of ['Confidence', 'Risk category', 'Cluster size', 'First seen', 'Last seen', 'Evidence count', 'Request id', 'Data version']) {
      assert.ok(text.includes(field), `${field} shown`);
    }
    assert.ok(text.includes(String(confidence)), 'the confidence');
    assert.ok(text.includes(recommendedAction('FLAGGED', confidence, 'payment')), 'the payment flow action');
    assert.ok(text.includes(recommendedAction('FLAGGED', confidence, 'onboarding')), 'the onboarding action');
    const sources = verdict.getByRole('table', { name: /Sources/ }).getByRole('link');
    assert.ok((await sources.count()) > 0, 'sources as links');
    assert.equal(await sources.first().getAttribute('target'), '_blank');
    assert.equal(await sources.first().getAttribute('rel'), 'noopener noreferrer');
    assert.match(text, /Request id\s*\S+/);
    assert.match(page.url(), /\/console\/screen\?upi=/);
    // Its history under the verdict: the change that flagged it, with the version that served it and why.
    const history = await service.request(`/v1/verify/upi/history?upi=${encodeURIComponent(flaggedVpa)}`, { key: service.adminKey });
    const changes = history.body.changes as { data_version: string }[];
    assert.ok(changes.length > 0);
    const timeline = page.getByRole('table', { name: `Changes (${changes.length}), oldest first` });
    await timeline.waitFor();
    const rows = timeline.getByRole('row');
    assert.equal(await rows.count(), changes.length + 1, 'a row per change, under the header');
    const first = (await rows.nth(1).textContent()) ?? '';
    assert.ok(first.includes('new evidence') && first.includes(changes[0]!.data_version), first);
    await screenshot(page, 'screen');
    await close(session);
  });

  it('screens a CSV: invalid entries reported, counts by band, a CSV download guarded against formulas', async () => {
    const session = await signedIn();
    const { page } = session;
    const csv = join(service.root, 'to-screen.csv');
    await writeFile(csv, ['name,UPI', `flagged,${flaggedVpa}`, 'unknown,nobody.e2e@ybl', 'broken,not a vpa', 'dash,-dash@ybl', `again,${flaggedVpa.toUpperCase()}`].join('\r\n'));

    await page.getByRole('link', { name: 'Screen', exact: true }).click();
    await page.getByLabel('CSV file').setInputFiles(csv);
    await page.getByRole('button', { name: 'Screen all' }).click();
    await page.getByRole('button', { name: 'Download CSV' }).waitFor();
    const invalid = page.getByRole('table', { name: /invalid entries/ });
    assert.match((await invalid.textContent()) ?? '', /not a vpa/);
    const counts = page.getByRole('table', { name: 'Counts by status and confidence band' });
    const cleared = counts.getByRole('row', { name: /CLEARED CLEARED/ });
    assert.match((await cleared.textContent()) ?? '', /CLEARED\s*CLEARED\s*2/);
    await screenshot(page, 'screen-batch');

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download CSV' }).click()]);
    const lines = (await readFile((await download.path())!, 'utf8')).trim().split(/\r\n/);
    assert.equal(lines.length, 4, `a header and three distinct VPAs: ${lines.join(' | ')}`);
    assert.match(lines[0]!, /^upi,status,confidence,band,/);
    assert.ok(lines.some((line) => line.startsWith(`${flaggedVpa},FLAGGED,`)));
    assert.ok(lines.some((line) => line.startsWith("'-dash@ybl,CLEARED,")), 'a cell starting with - is prefixed with an apostrophe');

    await page.getByRole('combobox', { name: 'Status' }).selectOption('FLAGGED');
    assert.equal(await page.getByRole('table', { name: /^Results/ }).getByRole('row').count(), 2, 'the header and the FLAGGED row');
    await close(session);
  });

  it('draws a cluster beside its member table; a member opens its verdict', async () => {
    const session = await signedIn();
    const { page } = session;
    await page.getByRole('link', { name: 'Clusters', exact: true }).click();
    const first = page.getByRole('table', { name: /largest clusters/ }).getByRole('link').first();
    const clusterId = (await first.textContent())!;
    await screenshot(page, 'clusters');
    await first.click();
    await page.getByRole('heading', { name: `Cluster ${clusterId}` }).waitFor();
    const graph = page.getByRole('img', { name: /Graph of cluster/ });
    await until('the graph drawn', 20_000, async () => (await graph.getAttribute('data-draw-ms')) !== null);
    const painted = await graph.evaluate((element) =>
      [...element.querySelectorAll('canvas')].some((canvas) => {
        const context = canvas.getContext('2d');
        if (context === null || canvas.width === 0) return false;
        const pixels = context.getImageData(0, 0, canvas.width, canvas.height).data;
        for (let i = 3; i < pixels.length; i += 4) if (pixels[i] !== 0) return true;
        return false;
      }),
    );
    assert.ok(painted, 'the graph canvas has something drawn on it');

    const members = page.getByRole('table', { name: /^Members/ });
    assert.ok((await members.getByRole('row').count()) > 2, 'members listed');
    const confidence = members.getByRole('columnheader', { name: /Confidence/ });
    assert.equal(await confidence.getAttribute('aria-sort'), 'descending');
    await confidence.getByRole('button').click();
    assert.equal(await confidence.getAttribute('aria-sort'), 'ascending');
    await screenshot(page, 'cluster');

    const member = members.getByRole('link').first();
    const upi = (await member.textContent())!;
    await member.click();
    await page.getByRole('region', { name: new RegExp(`${escapeRegExp(upi)} FLAGGED`) }).waitFor();
    assert.match(page.url(), /\/console\/screen\?upi=/);
    await close(session);
  });

  it('shows the intelligence; uploaded evidence is served at once, a bad file lists its lines', async () => {
    const session = await signedIn();
    const { page } = session;
    await page.getByRole('link', { name: 'Intelligence', exact: true }).click();
    await page.getByRole('heading', { name: 'Snapshot' }).waitFor();
    await page.getByRole('heading', { name: 'The last hour' }).waitFor();
    await screenshot(page, 'intelligence');

    const fresh = `fresh.e2e${Date.now()}@ybl`;
    const good = join(service.root, 'fresh.ndjson');
    const item = { evidence_id: `e2e-${fresh}`, upi: fresh, url: 'https://e2e.example/pay', source_category: 'scam', captured_at: new Date().toISOString() };
    await writeFile(good, `${JSON.stringify(item)}\n`);
    await page.getByLabel('Evidence file (NDJSON)').setInputFiles(good);
    await page.getByRole('button', { name: 'Upload evidence' }).click();
    await page.getByText('Stored and served.').waitFor();

    const bad = join(service.root, 'bad.ndjson');
    await writeFile(bad, `${JSON.stringify(item)}\n{"upi": 12}\nnot json\n`);
    await page.getByLabel('Evidence file (NDJSON)').setInputFiles(bad);
    await page.getByRole('button', { name: 'Upload evidence' }).click();
    const lines = page.getByRole('table', { name: /Invalid lines/ });
    await lines.waitFor();
    assert.equal(await lines.getByRole('row').count(), 3, 'the header and lines 2 and 3');

    await page.getByRole('link', { name: 'Screen', exact: true }).click();
    await page.getByRole('textbox', { name: 'VPA', exact: true }).fill(fresh);
    await page.getByRole('button', { name: 'Look up' }).click();
    await page.getByRole('region', { name: new RegExp(`${escapeRegExp(fresh)} FLAGGED`) }).waitFor();
    await close(session);
  });

  it('lists watchlists; one shows its VPAs by page, its events and their delivery attempts', async () => {
    const receiver = await startReceiver();
    try {
      // A receiver that is down: deliveries fail with 503 and are retried.
      receiver.status = 503;
      const created = await service.request('/v1/watchlists', {
        method: 'POST',
        key: service.screenKey,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'e2e settlement VPAs', webhook_url: receiver.url }),
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const id = String(created.body.id);
      // 100 VPAs that sort first fill page 1; page 2 holds one about to be flagged and a cluster member.
      const fillers = Array.from({ length: 100 }, (_, i) => `00e2e.idle${String(i).padStart(3, '0')}@ybl`);
      const watched = `watched.e2e${Date.now()}@ybl`;
      const clusters = (await service.request('/v1/admin/clusters?limit=1', { key: service.adminKey })).body.clusters as { cluster_id: string }[];
      const clusterId = clusters[0]!.cluster_id;
      const graph = await service.request(`/v1/admin/clusters/${clusterId}/graph`, { key: service.adminKey });
      const member = (graph.body.members as { upi: string }[])[0]!.upi;
      const put = await service.request(`/v1/watchlists/${id}/vpas`, {
        method: 'PUT',
        key: service.screenKey,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ upis: [...fillers, watched, member] }),
      });
      assert.equal(put.status, 200, JSON.stringify(put.body));

      const item = { evidence_id: `e2e-${watched}`, upi: watched, url: 'https://e2e.example/collect', source_category: 'scam', captured_at: new Date().toISOString() };
      const ingested = await service.request('/v1/admin/evidence', {
        method: 'POST',
        key: service.adminKey,
        headers: { 'content-type': 'application/x-ndjson' },
        body: `${JSON.stringify(item)}\n`,
      });
      assert.equal(ingested.status, 200, JSON.stringify(ingested.body));
      const delivery = async () => {
        const events = (await service.request(`/v1/admin/watchlists/${id}/events`, { key: service.adminKey })).body.events as { delivery: { state: string; attempts: { status: number | null }[] } }[];
        return events[0]?.delivery;
      };
      await until('a delivery refused with 503', 15_000, async () => (await delivery())?.attempts.some((attempt) => attempt.status === 503) ?? false);

      const session = await signedIn();
      const { page } = session;
      await page.getByRole('link', { name: 'Watchlists', exact: true }).click();
      const listed = page.getByRole('row', { name: /e2e settlement VPAs/ });
      await listed.waitFor();
      const [owner, webhook, count] = await listed.getByRole('cell').allTextContents();
      assert.match(owner ?? '', /^screening only key_/, 'the owner key by name');
      assert.equal(webhook, receiver.url);
      assert.equal(count, '102', 'the VPA count');
      await listed.getByRole('link', { name: 'e2e settlement VPAs' }).click();
      await page.getByRole('heading', { name: 'Watchlist “e2e settlement VPAs”' }).waitFor();
      assert.match(page.url(), new RegExp(`/console/watchlists/${id}$`));

      // The VPAs: page 1 is the fillers, CLEARED; the next page the VPA now FLAGGED and the cluster member.
      const firstPage = page.getByRole('table', { name: 'Watched VPAs, page 1' });
      await firstPage.waitFor();
      assert.equal(await firstPage.getByRole('row').count(), 101, 'the header and 100 VPAs');
      assert.match((await firstPage.getByRole('row', { name: /00e2e\.idle000@ybl/ }).textContent()) ?? '', /CLEARED/);
      await page.getByRole('button', { name: 'Next page' }).click();
      const secondPage = page.getByRole('table', { name: 'Watched VPAs, page 2' });
      const watchedRow = secondPage.getByRole('row', { name: new RegExp(escapeRegExp(watched)) });
      assert.match((await watchedRow.textContent()) ?? '', /FLAGGED/);
      assert.equal(await watchedRow.getByRole('link', { name: watched }).getAttribute('href'), `/console/screen?upi=${encodeURIComponent(watched)}`);
      const clusterLink = secondPage.getByRole('row', { name: new RegExp(escapeRegExp(member), 'i') }).getByRole('link', { name: clusterId });
      assert.equal(await clusterLink.getAttribute('href'), `/console/clusters/${clusterId}`);
      assert.equal(await page.getByRole('button', { name: 'Next page' }).isDisabled(), true, 'page 2 is the last');
      assert.equal(await page.getByRole('button', { name: 'Previous page' }).isEnabled(), true);

      // The event: CLEARED → FLAGGED, pending while the receiver is down; its attempts open beneath it.
      const events = page.getByRole('table', { name: /^Events, newest first/ });
      const eventRow = events.getByRole('row', { name: new RegExp(escapeRegExp(watched)) }).first();
      const eventText = (await eventRow.textContent()) ?? '';
      assert.match(eventText, /CLEARED\s*→\s*to\s*FLAGGED/, 'the status before and after');
      assert.match(eventText, /pending/);
      const toggle = eventRow.getByRole('button', { name: 'Attempts' });
      assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
      await toggle.click();
      const attempts = page.getByRole('table', { name: new RegExp(`^Delivery attempts for ${escapeRegExp(watched)}`) });
      await attempts.waitFor();
      assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
      const httpStatuses = () => attempts.locator('tbody td:nth-child(2)').allTextContents();
      assert.ok((await httpStatuses()).includes('503'), 'a failed attempt with its HTTP status');
      // By keyboard: Enter closes, Space opens again.
      await toggle.focus();
      await page.keyboard.press('Enter');
      await attempts.waitFor({ state: 'detached' });
      assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
      await page.keyboard.press('Space');
      await attempts.waitFor();

      // The receiver comes back: the next retry is delivered, and Refresh shows it.
      receiver.status = 200;
      await until('the event delivered', 30_000, async () => (await delivery())?.state === 'delivered');
      await page.getByRole('button', { name: 'Refresh' }).click();
      await eventRow.getByText('delivered').waitFor();
      assert.equal(await toggle.getAttribute('aria-expanded'), 'true', 'still open after the refresh');
      const statuses = await httpStatuses();
      assert.ok(statuses.includes('503') && statuses.at(-1) === '200', `the failed attempts, then the delivery: ${statuses.join(', ')}`);
      await screenshot(page, 'watchlists');

      await clusterLink.click();
      await page.getByRole('heading', { name: `Cluster ${clusterId}` }).waitFor();
      await close(session);
    } finally {
      await receiver.close();
    }
  });

  it('says which scope a session lacks, and returns to sign-in once its key is revoked', async () => {
    const operator = await signedIn();
    await operator.page.getByRole('link', { name: 'Keys', exact: true }).click();
    await operator.page.getByRole('textbox', { name: 'Name' }).fill('e2e admin only');
    await operator.page.getByRole('checkbox', { name: /^screen/ }).uncheck();
    await operator.page.getByRole('checkbox', { name: /^admin/ }).check();
    await operator.page.getByRole('button', { name: 'Create key' }).click();
    const adminOnly = await operator.page.getByRole('textbox', { name: 'New API key' }).inputValue();

    const session = await openConsole();
    const { page } = session;
    await signIn(page, service.base, adminOnly);
    await page.getByRole('link', { name: 'Screen', exact: true }).click();
    await page.getByRole('textbox', { name: 'VPA', exact: true }).fill(flaggedVpa);
    await page.getByRole('button', { name: 'Look up' }).click();
    const refusal = page.getByRole('alert');
    await refusal.waitFor();
    assert.match((await refusal.textContent()) ?? '', /screen/, 'the message names the missing scope');

    await operator.page.getByRole('row', { name: /e2e admin only/ }).getByRole('button', { name: 'Revoke', exact: true }).click();
    await operator.page.getByRole('dialog').getByRole('button', { name: 'Confirm revoke' }).click();
    await operator.page.getByRole('cell', { name: 'key revoked' }).first().waitFor();
    // Served within a second of the revocation: only then does the session's next call fail.
    await until('the revoked key refused', 5000, async () => (await lookupStatus(adminOnly)) === 401);
    await page.getByRole('link', { name: 'Keys', exact: true }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await close(session);
    await close(operator);
  });

  it('refuses a change that carries the session cookie without the CSRF token', async () => {
    const session = await signedIn();
    const { page } = session;
    const refused = await page.evaluate(async () => {
      const response = await fetch('/v1/admin/keys', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'forged' }) });
      return { status: response.status, body: (await response.json()) as { error?: string } };
    });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error, 'forbidden');
    await close(session);
  });

  it('resolves a data version to when it was served; one never served is refused', async () => {
    const session = await signedIn();
    const { page } = session;
    const { data_version: version } = (await service.request('/v1/admin/stats', { key: service.adminKey })).body as { data_version: string };
    await page.getByRole('link', { name: 'Intelligence', exact: true }).click();
    const lookup = page.getByRole('region', { name: 'Data version lookup' });
    await lookup.getByRole('textbox', { name: 'Data version' }).fill(version);
    await lookup.getByRole('button', { name: 'Look up' }).click();
    const fields = lookup.getByRole('definition');
    await lookup.getByText(`${version} found.`).waitFor();
    const served = (await service.request(`/v1/data-versions/${encodeURIComponent(version)}`, { key: service.adminKey })).body as { from: string; until: string | null; snapshot: string };
    assert.equal(await fields.nth(0).textContent(), version);
    assert.equal(await fields.nth(1).locator('time').getAttribute('datetime'), served.from);
    assert.equal(await fields.nth(2).textContent(), served.until === null ? 'still served' : await fields.nth(2).locator('time').textContent());
    assert.equal(await fields.nth(3).textContent(), served.snapshot);

    await lookup.getByRole('textbox', { name: 'Data version' }).fill('20200101T000000000Z-000000+7');
    await lookup.getByRole('button', { name: 'Look up' }).click();
    await lookup.getByRole('alert').filter({ hasText: 'was not served here' }).waitFor();
    await close(session);
  });

  it('compacts on request: the live delta is folded into a new snapshot', async () => {
    const session = await signedIn();
    const { page } = session;
    const before = (await service.request('/v1/admin/stats', { key: service.adminKey })).body as { snapshot: { id: string } };
    await page.getByRole('link', { name: 'Intelligence', exact: true }).click();
    await page.getByRole('button', { name: 'Compact now' }).click();
    await page.getByText(`Compaction of ${before.snapshot.id} started`).waitFor();
    // Served once built; the page shows it at its next refresh.
    await until('the compacted snapshot is served', 60_000, async () => {
      const now = (await service.request('/v1/admin/stats', { key: service.adminKey })).body as { snapshot: { id: string } };
      return now.snapshot.id !== before.snapshot.id;
    });
    await page.reload();
    const card = page.getByRole('region', { name: 'Snapshot' });
    await card.waitFor();
    assert.notEqual(await card.locator('code').first().textContent(), before.snapshot.id, 'the page shows the new snapshot');
    await close(session);
  });

  it('signs out: back to the sign-in form, and the old cookie no longer works', async () => {
    const session = await signedIn();
    const { page } = session;
    const cookie = (await session.context.cookies()).find((c) => c.name === '__Host-upi_risk_session')!;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    assert.equal(await focusedElement(page, 'H1 Sign in'), 'H1 Sign in', 'after sign-out, focus is on the sign-in heading');
    const after = await service.request('/v1/admin/session', { headers: { cookie: `${cookie.name}=${cookie.value}` } });
    assert.equal(after.status, 401);
    await close(session);
  });
});

describe('the console by keyboard, at 1280 and 320 px wide (WCAG 2.2 reflow)', () => {
  for (const width of [1280, 320]) {
    it(`passes axe-core on every page at ${width} px, without sideways scroll, with a focus indicator of 3:1 or more`, async () => {
      const name = `a11y ${width}`;
      const created = await service.request('/v1/watchlists', {
        method: 'POST',
        key: service.screenKey,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name, webhook_url: 'https://127.0.0.1:9/hook' }),
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const put = await service.request(`/v1/watchlists/${String(created.body.id)}/vpas`, {
        method: 'PUT',
        key: service.screenKey,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ upis: [flaggedVpa, 'nobody.a11y@ybl'] }),
      });
      assert.equal(put.status, 200, JSON.stringify(put.body));

      const session = await openConsole(width);
      const { page } = session;
      const faults: string[] = [];
      const check = async (state: string) => {
        faults.push(...(await auditPage(page, width, state)));
      };

      await page.goto(`${service.base}/console/`);
      await page.getByRole('textbox', { name: 'API key' }).fill('upirisk_not-a-key');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').waitFor();
      await check('sign-in, refused');

      await page.getByRole('textbox', { name: 'API key' }).fill(service.adminKey);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Sign out' }).waitFor();
      assert.equal(await focusedElement(page, 'H1 Keys'), 'H1 Keys', 'after sign-in, focus is on the first heading');
      await page.getByRole('table', { name: /^API keys/ }).waitFor();
      await page.getByRole('table', { name: 'Changes, newest first' }).waitFor();
      await check('keys');

      await page.getByRole('textbox', { name: 'Name' }).fill(name);
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.getByText('You will not see this key again').waitFor();
      await check('keys, a key issued');
      await page.getByRole('row', { name: new RegExp(name) }).getByRole('button', { name: 'Revoke', exact: true }).click();
      await page.getByRole('dialog').waitFor();
      await check('keys, the revoke dialog');
      await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();

      await page.getByRole('link', { name: 'Screen', exact: true }).click();
      await page.getByRole('textbox', { name: 'VPA', exact: true }).fill(flaggedVpa);
      await page.getByRole('button', { name: 'Look up' }).click();
      await page.getByRole('region', { name: /FLAGGED/ }).waitFor();
      await page.getByRole('textbox', { name: /^Addresses to screen/ }).fill(`${flaggedVpa}\nnobody.a11y@ybl\nnot a vpa`);
      await page.getByRole('button', { name: 'Screen all' }).click();
      await page.getByRole('button', { name: 'Download CSV' }).waitFor();
      await check('screen, a verdict and a batch');

      await page.getByRole('link', { name: 'Clusters', exact: true }).click();
      const first = page.getByRole('table', { name: /largest clusters/ }).getByRole('link').first();
      await first.waitFor();
      await check('clusters');
      await first.click();
      const graph = page.getByRole('img', { name: /Graph of cluster/ });
      await until('the graph drawn', 20_000, async () => (await graph.getAttribute('data-draw-ms')) !== null);
      await check('cluster');

      await page.getByRole('link', { name: 'Intelligence', exact: true }).click();
      await page.getByRole('region', { name: 'Snapshot' }).waitFor();
      await check('intelligence');

      await page.getByRole('link', { name: 'Watchlists', exact: true }).click();
      const listed = page.getByRole('row', { name: new RegExp(name) }).getByRole('link', { name });
      await listed.waitFor();
      await check('watchlists');
      await listed.click();
      await page.getByRole('table', { name: 'Watched VPAs, page 1' }).waitFor();
      await check('watchlist');

      await page.goto(`${service.base}/console/nowhere`);
      await page.getByRole('heading', { name: 'Not found' }).waitFor();
      await check('not found');

      assert.deepEqual(faults, [], `accessibility faults at ${width} px:\n${faults.join('\n')}`);
      await close(session);
    });
  }
});
