-- switchyard_write_batch (the fast paths' batched write, 20261204000015) takes its rows as array
-- parameters, so PostgreSQL's plan cache judged its statement by each call's values and planned
-- it afresh every time (a custom plan: about 0.3 ms of a 0.55 ms call on a 2-core machine, three
-- times per durable call). Its plan does not depend on those values — the SET clauses already
-- keep it on the primary-key and ingress-key indexes — so each connection plans it once.
ALTER FUNCTION switchyard_write_batch(text[], text[], text[], text[], text[], text[], text[], text[], text[],
    text[], text[], bigint[], text[], bigint[], bigint[], bigint[], text[], text[], text[], text[], text[],
    bigint[], text[], text[], bigint[], bigint[], bigint[], bigint[], bigint[], text[], bigint[], text[], bigint[],
    text[], text[], text[])
    SET plan_cache_mode = force_generic_plan;
