// Transfer charged (issue 37): per owner and hour, the bytes served to the public that the ledger has
// charged so far. A settlement charges only what the request log holds beyond it, and moves it in the
// same transaction as its ledger entry, only if no other settlement moved it meanwhile: a settlement
// run twice, or by two nodes at once, charges each byte once.
export const sql = `
CREATE TABLE transfer_charges (
  owner_id TEXT NOT NULL,
  hour     INTEGER NOT NULL,
  bytes    INTEGER NOT NULL,
  PRIMARY KEY (owner_id, hour)
) WITHOUT ROWID;
`;
