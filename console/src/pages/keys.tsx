/**
 * Keys: every key with its use over the last day; create, rotate, revoke
 * (after a confirmation) and change plan; the audit record of every change.
 */
import { useRef, useState } from 'preact/hooks';
import { KEY_SCOPES, type KeyScope } from '../../../src/access/key-record.js';
import { changePlan, createKey, listAudit, listKeys, revokeKey, rotateKey } from '../api/admin.js';
import { describeError } from '../api/client.js';
import type { AuditRecord, KeyRecord, Session } from '../api/types.js';
import { ErrorMessage } from '../components/error-message.js';
import { IssuedKeyPanel, type IssuedKeyView } from '../components/issued-key-panel.js';
import { PageHeading } from '../components/page-heading.js';
import { RevokeDialog } from '../components/revoke-dialog.js';
import { Time } from '../components/time.js';
import { formatNumber } from '../format.js';
import { useLoad } from '../use-load.js';
import { Table, numeric } from '../components/table.js';

const AUDIT_LIMIT = 100;

const SCOPE_HINTS: Readonly<Record<KeyScope, string>> = {
  screen: 'look up VPAs and clusters',
  ingest: 'send and retract evidence',
  admin: 'manage keys and sign in to this console',
};

export function KeysPage({ session }: { readonly session: Session }) {
  const keys = useLoad((signal) => listKeys(signal), []);
  const audit = useLoad((signal) => listAudit(AUDIT_LIMIT, signal), []);
  const [issued, setIssued] = useState<IssuedKeyView | null>(null);
  const [revoking, setRevoking] = useState<KeyRecord | null>(null);
  const [status, setStatus] = useState('');
  const [error, setError] = useState<string | null>(null);

  const refresh = () => Promise.all([keys.reload(), audit.reload()]);

  /** Run one change; its outcome goes to the status line or the error (it never rejects: reload() reports its own failure). */
  const change = async (work: () => Promise<string>) => {
    setError(null);
    setStatus('Working…');
    try {
      setStatus(await work());
    } catch (failure) {
      setStatus('');
      setError(describeError(failure));
    }
    await refresh();
  };

  const onCreate = (name: string, plan: string, scopes: readonly KeyScope[]) =>
    change(async () => {
      const created = await createKey(name, plan, scopes);
      setIssued({ key: created.key, name: created.record.name, how: 'created' });
      return `Key “${created.record.name}” created.`;
    });

  const onRotate = (key: KeyRecord) => {
    void change(async () => {
      const rotated = await rotateKey(key.id);
      setIssued({ key: rotated.key, name: rotated.record.name, how: 'rotated' });
      return `Key “${key.name}” rotated.`;
    });
  };

  const onRevoke = (key: KeyRecord) => {
    setRevoking(null);
    void change(async () => {
      await revokeKey(key.id);
      return `Key “${key.name}” revoked.`;
    });
  };

  const onPlan = (key: KeyRecord, plan: string) => {
    void change(async () => {
      const record = await changePlan(key.id, plan);
      return `Plan of “${record.name}” is now ${record.plan}.`;
    });
  };

  const names = new Map((keys.data?.keys ?? []).map((key) => [key.id, key.name]));

  return (
    <>
      <PageHeading title="Keys" />
      {issued === null ? null : <IssuedKeyPanel issued={issued} onDone={() => setIssued(null)} />}
      <p role="status" class="status">
        {status}
      </p>
      <ErrorMessage message={error} />

      <section aria-labelledby="create-title">
        <h2 id="create-title">Create a key</h2>
        <CreateKeyForm plans={keys.data?.plans ?? ['default']} onCreate={onCreate} />
      </section>

      <section aria-labelledby="keys-title">
        <h2 id="keys-title">All keys</h2>
        <ErrorMessage message={keys.error} />
        {keys.data === null ? (
          keys.loading ? <p role="status">Loading keys…</p> : null
        ) : (
          <KeyTable keys={keys.data.keys} plans={keys.data.plans} ownKeyId={session.key.id} onRotate={onRotate} onRevoke={setRevoking} onPlan={onPlan} />
        )}
      </section>

      <section aria-labelledby="audit-title">
        <h2 id="audit-title">Audit record</h2>
        <ErrorMessage message={audit.error} />
        {audit.data === null ? null : <AuditTable records={audit.data} names={names} />}
      </section>

      <RevokeDialog target={revoking} ownKey={revoking?.id === session.key.id} onConfirm={onRevoke} onCancel={() => setRevoking(null)} />
    </>
  );
}

function CreateKeyForm({ plans, onCreate }: { readonly plans: readonly string[]; readonly onCreate: (name: string, plan: string, scopes: readonly KeyScope[]) => Promise<void> }) {
  const form = useRef<HTMLFormElement>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const onSubmit = (event: SubmitEvent) => {
    event.preventDefault();
    const data = new FormData(form.current!);
    // Text fields: a File would be an upload.
    const field = (key: string) => {
      const value = data.get(key);
      return typeof value === 'string' ? value : null;
    };
    const name = (field('name') ?? '').trim();
    const plan = field('plan') ?? 'default';
    const scopes = KEY_SCOPES.filter((scope) => data.getAll('scopes').includes(scope));
    if (name === '') return setProblem('Give the key a name.');
    if (scopes.length === 0) return setProblem('Choose at least one scope.');
    setProblem(null);
    setBusy(true);
    // onCreate never rejects: a failure is shown in the page's error.
    void onCreate(name, plan, scopes).finally(() => {
      setBusy(false);
      form.current?.reset();
    });
  };

  return (
    <form ref={form} class="create-key" onSubmit={onSubmit}>
      <div class="field">
        <label for="key-name">Name</label>
        <input id="key-name" name="name" type="text" maxLength={200} autocomplete="off" />
      </div>
      <div class="field">
        <label for="key-plan">Plan</label>
        <select id="key-plan" name="plan">
          {plans.map((plan) => (
            <option key={plan} value={plan}>
              {plan}
            </option>
          ))}
        </select>
      </div>
      <fieldset>
        <legend>Scopes</legend>
        {KEY_SCOPES.map((scope) => (
          <label key={scope} class="check">
            <input type="checkbox" name="scopes" value={scope} defaultChecked={scope === 'screen'} /> {scope}{' '}
            <span class="muted">({SCOPE_HINTS[scope]})</span>
          </label>
        ))}
      </fieldset>
      <button type="submit" disabled={busy}>
        Create key
      </button>
      <ErrorMessage message={problem} />
    </form>
  );
}

interface KeyTableProps {
  readonly keys: readonly KeyRecord[];
  readonly plans: readonly string[];
  readonly ownKeyId: string;
  readonly onRotate: (key: KeyRecord) => void;
  readonly onRevoke: (key: KeyRecord) => void;
  readonly onPlan: (key: KeyRecord, plan: string) => void;
}

function KeyTable({ keys, plans, ownKeyId, onRotate, onRevoke, onPlan }: KeyTableProps) {
  if (keys.length === 0) return <p>No keys yet.</p>;
  return (
    <Table caption="API keys: use over the last 24 hours" columns={['Name', 'Scopes', 'Plan', 'Created', 'Last used', numeric('Requests 24h'), numeric('429s 24h'), 'State', 'Actions']}>
      {keys.map((key) => {
        const rowId = `key-${key.id}`;
        const revoked = key.revoked_at !== null;
        return (
          <tr key={key.id} class={revoked ? 'revoked' : undefined}>
            <th scope="row" id={rowId}>
              {key.name}
              {key.id === ownKeyId ? ' (this session)' : ''} <span class="muted">{key.id}</span>
            </th>
            <td>{key.scopes.join(', ')}</td>
            <td>
              {revoked ? (
                key.plan
              ) : (
                <select aria-label="Plan" aria-describedby={rowId} value={key.plan} onChange={(event) => onPlan(key, event.currentTarget.value)}>
                  {(plans.includes(key.plan) ? plans : [key.plan, ...plans]).map((plan) => (
                    <option key={plan} value={plan}>
                      {plan}
                    </option>
                  ))}
                </select>
              )}
            </td>
            <td>
              <Time iso={key.created_at} />
            </td>
            <td>
              <Time iso={key.last_used_at} />
            </td>
            <td class="num">{formatNumber(key.requests_24h)}</td>
            <td class="num">{formatNumber(key.rate_limited_24h)}</td>
            <td>
              <KeyState record={key} />
            </td>
            <td class="actions">
              {revoked ? null : (
                <>
                  <button type="button" aria-describedby={rowId} onClick={() => onRotate(key)}>
                    Rotate
                  </button>
                  <button type="button" class="danger" aria-describedby={rowId} onClick={() => onRevoke(key)}>
                    Revoke
                  </button>
                </>
              )}
            </td>
          </tr>
        );
      })}
    </Table>
  );
}

function KeyState({ record }: { readonly record: KeyRecord }) {
  if (record.revoked_at !== null) {
    return (
      <span class="badge revoked">
        revoked <Time iso={record.revoked_at} />
      </span>
    );
  }
  if (record.rotated_at !== null) {
    return (
      <span class="badge">
        active, rotated <Time iso={record.rotated_at} />
      </span>
    );
  }
  return <span class="badge">active</span>;
}

const ACTIONS: Readonly<Record<string, string>> = {
  'key.created': 'key created',
  'key.rotated': 'key rotated',
  'key.revoked': 'key revoked',
  'key.plan_changed': 'plan changed',
  'session.signed_in': 'signed in',
  'session.signed_out': 'signed out',
  'evidence.retracted': 'evidence retracted',
  'clearance.created': 'VPA cleared',
  'clearance.ended': 'clearance ended',
  'dispute.resolved': 'dispute resolved',
  'report.accepted': 'report accepted',
  'report.dismissed': 'report dismissed',
};

function AuditTable({ records, names }: { readonly records: readonly AuditRecord[]; readonly names: ReadonlyMap<string, string> }) {
  if (records.length === 0) return <p>No changes recorded yet.</p>;
  return (
    <Table caption="Changes, newest first" columns={['At', 'By', 'Action', 'Key', 'Details']}>
      {records.map((record) => (
        <tr key={record.id}>
          <td>
            <Time iso={record.at} />
          </td>
          <td>
            {record.actor.name}
            {record.actor.key_id === null ? null : <span class="muted"> {record.actor.key_id}</span>}
          </td>
          <td>{ACTIONS[record.action] ?? record.action}</td>
          <td>
            {record.target === null ? '—' : names.get(record.target) ?? ''}
            {record.target === null ? null : <span class="muted"> {record.target}</span>}
          </td>
          <td>{describeDetails(record.details)}</td>
        </tr>
      ))}
    </Table>
  );
}

/** An audit record's details in words: a plan change as from → to, scopes as a list, anything else as JSON. */
function describeDetails(details: unknown): string {
  if (details === null || details === undefined) return '';
  if (typeof details !== 'object') return typeof details === 'string' ? details : JSON.stringify(details);
  const parts: string[] = [];
  for (const [field, value] of Object.entries(details as Record<string, unknown>)) {
    if (typeof value === 'object' && value !== null && 'from' in value && 'to' in value) {
      parts.push(`${field}: ${String(value.from)} → ${String(value.to)}`);
    } else if (Array.isArray(value)) {
      parts.push(`${field}: ${value.join(', ')}`);
    } else {
      parts.push(`${field}: ${typeof value === 'string' ? value : JSON.stringify(value)}`);
    }
  }
  return parts.join('; ');
}
