-- The invocation a call was made for (a bridged call's run), of the same tenant; NULL for a
-- call a client made itself. Immutable, like the rest of an invocation's identity.
ALTER TABLE invocations ADD COLUMN parent_id TEXT;
