/**
 * Clearances: VPAs whose evidence was set aside after a review (an upheld
 * dispute makes one), in the order made, in force and ended, a page at a
 * time. Ending one in force makes the evidence it set aside count again.
 */
import { useRef, useState } from 'preact/hooks';
import { describeError } from '../api/client.js';
import { endClearance, listClearances } from '../api/corrections.js';
import type { Clearance } from '../api/types.js';
import { Link, disputePath, screenPath } from '../router.js';
import { useCursorPages } from '../use-cursor-pages.js';
import { ErrorMessage } from './error-message.js';
import { Pager } from './pager.js';
import { Table } from './table.js';
import { Time } from './time.js';

const CLEARANCES_PER_PAGE = 50;

export function ClearanceList({ onEnded }: { readonly onEnded: () => void }) {
  const clearances = useCursorPages((cursor, signal) => listClearances(CLEARANCES_PER_PAGE, cursor, signal));
  const heading = useRef<HTMLHeadingElement>(null);
  const [status, setStatus] = useState('');
  const [error, setError] = useState<string | null>(null);
  const page = clearances.loaded.data;

  /** End one in force; never rejects (a failure is shown, reload() reports its own). */
  const end = async (clearance: Clearance) => {
    setError(null);
    setStatus(`Ending the clearance of ${clearance.upi}…`);
    try {
      const ended = await endClearance(clearance.id);
      setStatus(`The clearance of ${ended.upi} ended: its evidence counts again, from data version ${ended.data_version}.`);
      onEnded();
    } catch (failure) {
      setStatus('');
      setError(describeError(failure));
    }
    await clearances.loaded.reload();
    // The button is gone: focus goes to the section's heading, just above the status line.
    heading.current?.focus();
  };

  return (
    <section aria-labelledby="clearances-title">
      <h2 id="clearances-title" ref={heading} tabIndex={-1}>
        Clearances
      </h2>
      <p>A cleared VPA’s evidence does not count; evidence from a new url captured afterwards flags it again.</p>
      <p role="status" class="status">
        {status}
      </p>
      <ErrorMessage message={error ?? clearances.loaded.error} />
      {page === null ? (
        clearances.loaded.loading ? <p role="status">Loading clearances…</p> : null
      ) : page.clearances.length === 0 && clearances.number === 1 ? (
        <p>No VPA has been cleared.</p>
      ) : (
        <Table caption={`Clearances in the order made, page ${clearances.number}`} columns={['VPA', 'Reason', 'Reference', 'Made', 'By', 'Ended', 'End']}>
          {page.clearances.map((clearance) => {
            const rowId = `clearance-${clearance.id}`;
            return (
              <tr key={clearance.id}>
                <th scope="row" id={rowId} class="vpa">
                  <Link href={screenPath(clearance.upi)}>{clearance.upi}</Link>
                </th>
                <td class="text">{clearance.reason}</td>
                <td>
                  <Reference text={clearance.reference} />
                </td>
                <td>
                  <Time iso={clearance.created_at} />
                </td>
                <td>
                  <code>{clearance.created_by}</code>
                </td>
                <td>{clearance.ended_at === null ? 'in force' : <Time iso={clearance.ended_at} />}</td>
                <td>
                  {clearance.ended_at === null ? (
                    <button type="button" class="secondary" aria-describedby={rowId} onClick={() => void end(clearance)}>
                      End clearance
                    </button>
                  ) : null}
                </td>
              </tr>
            );
          })}
        </Table>
      )}
      <Pager pages={clearances} previousLabel="Earlier clearances" nextLabel="Later clearances" focusOnTurn={heading} />
    </section>
  );
}

/** A clearance's reference; an upheld dispute's id (the reference of the clearance it made) links to the dispute. */
function Reference({ text }: { readonly text: string | null }) {
  if (text === null) return <>—</>;
  return /^dsp_[0-9a-f]{28}$/.test(text) ? <Link href={disputePath(text)}>{text}</Link> : <>{text}</>;
}
