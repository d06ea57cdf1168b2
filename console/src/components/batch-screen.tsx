/**
 * Many VPAs: a pasted list or a CSV file, checked, screened in batches with
 * a progress bar, counted by status and advice band, filtered, and
 * downloadable as CSV.
 */
import { useMemo, useRef, useState } from 'preact/hooks';
import { BAND_LABELS, CONFIDENCE_BANDS, bandAction, confidenceBand, type ConfidenceBand } from '../../../src/api/advice.js';
import { describeError } from '../api/client.js';
import { formatConfidence, formatNumber } from '../format.js';
import { Link, clusterPath, screenPath } from '../router.js';
import { BATCH_SIZE, screenInBatches, type BatchProgress, type ScreenedRow } from '../screen/batch-run.js';
import { resultsCsv } from '../screen/result-csv.js';
import { MAX_LIST_VPAS, parseCsvList, parsePastedList, type InvalidEntry } from '../screen/vpa-list.js';
import { ErrorMessage } from './error-message.js';
import { Table, numeric } from './table.js';

/** Rows drawn in the page; the download holds them all. */
const SHOWN_ROWS = 500;
const SHOWN_INVALID = 100;

type Run =
  | { readonly kind: 'idle' }
  | { readonly kind: 'running'; readonly progress: BatchProgress }
  | { readonly kind: 'done'; readonly rows: readonly ScreenedRow[] };

interface Checked {
  readonly invalid: readonly InvalidEntry[];
  readonly duplicates: number;
  readonly skippedHeader: boolean;
}

type StatusFilter = 'all' | 'FLAGGED' | 'CLEARED';
type BandFilter = 'all' | ConfidenceBand;

interface Row extends ScreenedRow {
  readonly band: ConfidenceBand;
}

export function BatchScreen() {
  const listField = useRef<HTMLTextAreaElement>(null);
  const fileField = useRef<HTMLInputElement>(null);
  const running = useRef<AbortController | null>(null);
  const [run, setRun] = useState<Run>({ kind: 'idle' });
  const [checked, setChecked] = useState<Checked | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [statusFilter, setStatusFilter] = useState<StatusFilter>('all');
  const [bandFilter, setBandFilter] = useState<BandFilter>('all');

  const onSubmit = async (event: SubmitEvent) => {
    event.preventDefault();
    if (running.current !== null) return;
    setError(null);
    setChecked(null);
    const file = fileField.current?.files?.[0];
    const list = file === undefined ? parsePastedList(listField.current!.value) : parseCsvList(await file.text());
    if (!list.ok) {
      setRun({ kind: 'idle' });
      setError(list.message);
      return;
    }
    setChecked(list);
    if (list.vpas.length === 0) {
      setRun({ kind: 'idle' });
      setError(list.invalid.length === 0 ? 'Paste VPAs or choose a CSV file first.' : 'No valid VPA to screen.');
      return;
    }
    const controller = new AbortController();
    running.current = controller;
    try {
      const rows = await screenInBatches(list.vpas, controller.signal, (progress) => setRun({ kind: 'running', progress }));
      setRun({ kind: 'done', rows });
    } catch (failure) {
      setRun({ kind: 'idle' });
      setError(describeError(failure));
    } finally {
      running.current = null;
    }
  };

  const rows: readonly Row[] = useMemo(
    () => (run.kind === 'done' ? run.rows.map((row) => ({ ...row, band: confidenceBand(row.item.status, row.item.confidence) })) : []),
    [run],
  );
  const filtered = rows.filter((row) => (statusFilter === 'all' || row.item.status === statusFilter) && (bandFilter === 'all' || row.band === bandFilter));

  const onDownload = () => downloadCsv(resultsCsv(filtered), `upi-risk-screening-${new Date().toISOString().slice(0, 19).replaceAll(':', '')}.csv`);

  return (
    <section aria-labelledby="many-title">
      <h2 id="many-title">Many VPAs</h2>
      <p>
        Up to {formatNumber(MAX_LIST_VPAS)}, screened in batches of {BATCH_SIZE}. Invalid entries are listed and not sent; repeated ones are
        screened once. A chosen file is used instead of the pasted list.
      </p>
      <form class="batch" onSubmit={(event) => void onSubmit(event)}>
        <div class="field">
          <label for="vpa-list">Addresses to screen, one per line or separated by commas</label>
          <textarea id="vpa-list" ref={listField} rows={6} spellcheck={false} autocomplete="off" />
        </div>
        <div class="field">
          <label for="vpa-file">CSV file</label>
          <input id="vpa-file" ref={fileField} type="file" accept=".csv,text/csv,text/plain" aria-describedby="vpa-file-hint" />
          <span id="vpa-file-hint" class="muted">
            The column named upi or vpa, else the first column; a header row is skipped.
          </span>
        </div>
        <div class="button-row">
          <button type="submit" disabled={run.kind === 'running'}>
            Screen all
          </button>
          {run.kind === 'running' ? (
            <button type="button" onClick={() => running.current?.abort()}>
              Stop
            </button>
          ) : null}
        </div>
      </form>
      <ErrorMessage message={error} />
      {run.kind === 'running' ? <Progress progress={run.progress} /> : null}
      {checked === null ? null : <CheckSummary checked={checked} />}
      {run.kind === 'done' ? (
        <>
          <p role="status" class="status">
            Screened {formatNumber(rows.length)}: {formatNumber(rows.filter((row) => row.item.status === 'FLAGGED').length)} FLAGGED,{' '}
            {formatNumber(rows.filter((row) => row.item.status === 'CLEARED').length)} CLEARED.
          </p>
          <BandCounts rows={rows} />
          <div class="filters">
            <label for="filter-status">Status</label>
            <select id="filter-status" value={statusFilter} onChange={(event) => setStatusFilter(event.currentTarget.value as StatusFilter)}>
              <option value="all">All</option>
              <option value="FLAGGED">FLAGGED</option>
              <option value="CLEARED">CLEARED</option>
            </select>
            <label for="filter-band">Confidence band</label>
            <select id="filter-band" value={bandFilter} onChange={(event) => setBandFilter(event.currentTarget.value as BandFilter)}>
              <option value="all">All</option>
              {CONFIDENCE_BANDS.map((band) => (
                <option key={band} value={band}>
                  {BAND_LABELS[band]}
                </option>
              ))}
            </select>
            <button type="button" onClick={onDownload} aria-describedby="download-what">
              Download CSV
            </button>
            <span id="download-what" class="muted">
              the {formatNumber(filtered.length)} rows the filters select
            </span>
          </div>
          <ResultTable rows={filtered} />
        </>
      ) : null}
    </section>
  );
}

function Progress({ progress }: { readonly progress: BatchProgress }) {
  return (
    <div class="progress">
      <label for="batch-progress">Screening progress</label>
      <progress id="batch-progress" max={progress.total} value={progress.done} />
      <span role="status">
        {formatNumber(progress.done)} of {formatNumber(progress.total)} screened
      </span>
    </div>
  );
}

function CheckSummary({ checked }: { readonly checked: Checked }) {
  const notes: string[] = [];
  if (checked.skippedHeader) notes.push('The header row was skipped.');
  if (checked.duplicates > 0) notes.push(`${formatNumber(checked.duplicates)} repeated entries were screened once.`);
  return (
    <>
      {notes.length === 0 ? null : <p>{notes.join(' ')}</p>}
      {checked.invalid.length === 0 ? null : (
        <Table
          caption={`${formatNumber(checked.invalid.length)} invalid entries, not sent${checked.invalid.length > SHOWN_INVALID ? ` (the first ${SHOWN_INVALID} shown)` : ''}`}
          class="invalid"
          columns={[numeric('Line'), 'Entry', 'Why']}
        >
          {checked.invalid.slice(0, SHOWN_INVALID).map((entry) => (
            <tr key={`${entry.line}-${entry.entry}`}>
              <td class="num">{entry.line}</td>
              <td>
                <code>{entry.entry}</code>
              </td>
              <td>{entry.reason}</td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
}

function BandCounts({ rows }: { readonly rows: readonly Row[] }) {
  const counts = new Map<ConfidenceBand, number>(CONFIDENCE_BANDS.map((band) => [band, 0]));
  for (const row of rows) counts.set(row.band, counts.get(row.band)! + 1);
  return (
    <Table caption="Counts by status and confidence band" class="counts" columns={['Status', 'Band', numeric('Count'), 'Payment flow', 'Merchant onboarding']}>
      {CONFIDENCE_BANDS.map((band) => (
        <tr key={band} class={`band-${band}`}>
          <td>{band === 'cleared' ? 'CLEARED' : 'FLAGGED'}</td>
          <th scope="row">{BAND_LABELS[band]}</th>
          <td class="num">{formatNumber(counts.get(band))}</td>
          <td>{bandAction(band, 'payment')}</td>
          <td>{bandAction(band, 'onboarding')}</td>
        </tr>
      ))}
    </Table>
  );
}

function ResultTable({ rows }: { readonly rows: readonly Row[] }) {
  if (rows.length === 0) return <p>No result matches the filters.</p>;
  return (
    <Table
      caption={`Results${rows.length > SHOWN_ROWS ? `: the first ${formatNumber(SHOWN_ROWS)} of ${formatNumber(rows.length)} (the download holds them all)` : ''}`}
      class="results"
      columns={['UPI', 'Status', numeric('Confidence'), 'Band', 'Risk category', 'Cluster', numeric('Cluster size'), numeric('Evidence'), 'Payment flow']}
    >
      {rows.slice(0, SHOWN_ROWS).map(({ item, band }) => (
        <tr key={item.upi}>
          <th scope="row" class="vpa">
            <Link href={screenPath(item.upi)}>{item.upi}</Link>
          </th>
          <td>
            <span class={`badge ${item.status === 'FLAGGED' ? 'flagged' : 'cleared'}`}>{item.status}</span>
          </td>
          <td class="num">{formatConfidence(item.confidence)}</td>
          <td>{BAND_LABELS[band]}</td>
          <td>{item.risk_category ?? '—'}</td>
          <td>{item.cluster_id === null ? '—' : <Link href={clusterPath(item.cluster_id)}>{item.cluster_id}</Link>}</td>
          <td class="num">{formatNumber(item.cluster_size)}</td>
          <td class="num">{formatNumber(item.evidence_count)}</td>
          <td>{bandAction(band, 'payment')}</td>
        </tr>
      ))}
    </Table>
  );
}

/** Save `text` as a file through a Blob link: nothing leaves the browser. */
function downloadCsv(text: string, fileName: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/csv;charset=utf-8' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = fileName;
  document.body.append(link);
  link.click();
  link.remove();
  // After the click has been handled, or the download may find the url gone.
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
