-- A task is its creator's: the subject that sent its first message. Reads by id and listings see
-- only the owner's tasks unless the caller reads tenant-wide (the `tasks:admin` scope). A row
-- written before tasks had owners takes the subject of the invocation that last wrote it.
ALTER TABLE a2a_tasks ADD COLUMN owner TEXT NOT NULL DEFAULT '';
UPDATE a2a_tasks t SET owner = i.subject
    FROM invocations i
    WHERE t.run_cursor <> '' AND i.id = split_part(t.run_cursor, ':', 1);
