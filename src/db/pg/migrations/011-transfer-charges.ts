// SQLite migration 026's twin: the bytes of each owner's hour the ledger has charged.
export const sql = `
CREATE TABLE transfer_charges (
  owner_id TEXT COLLATE "C" NOT NULL,
  hour     BIGINT NOT NULL,
  bytes    BIGINT NOT NULL,
  PRIMARY KEY (owner_id, hour)
);
`;
