-- Recovery expires calls held for approval too long (the policy enforcement point): it scans
-- them oldest first; only those rows are indexed.
CREATE INDEX invocations_held ON invocations (created_ms) WHERE state = 'awaiting_approval';
