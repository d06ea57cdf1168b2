-- A correction reads a VPA's evidence logged up to its position
-- (correction-log.ts, evidenceOfVpas). On evidence(upi) alone the planner
-- met `position <= $2` with a bitmap of the primary key over every row up
-- to that position: at 19M rows about a second a correction on each
-- follower (bench/MEASUREMENTS.md, "Corrections: two followers"). On
-- (upi, position) both conditions are one index range.
CREATE INDEX evidence_by_upi_position ON evidence (upi, position);
DROP INDEX evidence_by_upi;
