-- Grants the policy enforcement point accepts (minted by `switchyard grants mint`): kept so
-- they can be listed and revoked; a revocation takes effect at every replica's next decision.
CREATE TABLE grants (
    id          TEXT   PRIMARY KEY,
    tenant      TEXT   NOT NULL,
    subject     TEXT   NOT NULL,
    claims      TEXT   NOT NULL,
    minted_ms   BIGINT NOT NULL,
    revoked_ms  BIGINT,
    revoked_by  TEXT
);
CREATE INDEX grants_by_tenant ON grants (tenant, minted_ms DESC);
