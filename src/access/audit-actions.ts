/** What an audit record says was done (docs/console.md): kept apart from the log so the console's types can name them. */
export const AUDIT_ACTIONS = [
  'key.created',
  'key.rotated',
  'key.revoked',
  'key.plan_changed',
  'session.signed_in',
  'session.signed_out',
  'compaction.requested',
  'evidence.retracted',
  'clearance.created',
  'clearance.ended',
  'dispute.resolved',
  'report.accepted',
  'report.dismissed',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];
