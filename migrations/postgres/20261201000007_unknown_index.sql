-- Recovery participants (the A2A supervisor) scan one upstream's `unknown` invocations by id;
-- only those rows are indexed.
CREATE INDEX invocations_unknown ON invocations (upstream, id) WHERE state = 'unknown';
