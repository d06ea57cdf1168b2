-- Disputes and reports (docs/api.md, Disputes and reports): each row is one
-- dispute or report, `record` its whole JSON (what the analysts' view
-- shows), with the columns lists and rules need beside it. One open dispute
-- per key and VPA, whichever follower opens it; ids sort by time, so pages
-- go by id.
CREATE TABLE disputes (
  id     text PRIMARY KEY,
  owner  text NOT NULL,
  upi    text NOT NULL,
  status text NOT NULL CHECK (status IN ('OPEN', 'UPHELD', 'REJECTED')),
  record jsonb NOT NULL
);
CREATE UNIQUE INDEX disputes_open_once ON disputes (owner, upi) WHERE status = 'OPEN';
CREATE INDEX disputes_by_owner ON disputes (owner, id);
CREATE INDEX disputes_by_status ON disputes (status, id);

CREATE TABLE reports (
  id     text PRIMARY KEY,
  owner  text NOT NULL,
  upi    text NOT NULL,
  status text NOT NULL CHECK (status IN ('RECEIVED', 'ACCEPTED', 'DISMISSED')),
  record jsonb NOT NULL
);
CREATE INDEX reports_by_owner ON reports (owner, id);
CREATE INDEX reports_by_status ON reports (status, id);
