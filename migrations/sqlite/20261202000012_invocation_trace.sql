-- The caller's W3C trace context (`traceparent`, a newline, `tracestate`), kept with the call so
-- that a driver that takes it up later (after a restart, a takeover, an approval) continues the
-- caller's trace. NULL: the caller sent none.
ALTER TABLE invocations ADD COLUMN trace_context TEXT;
