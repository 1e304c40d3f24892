// Upload credit reservations in the database (issue 21), so that every process serving one data
// directory (cluster workers, later nodes on one database) reserves against the same balance. A holder
// is one process instance (a random id per start) and its heartbeat: the reservations of a holder not
// seen for a minute are dead (src/credits/credits.ts says why that is safe).
export const sql = `
CREATE TABLE credit_holders (
  holder   TEXT PRIMARY KEY,
  -- Unix milliseconds of the holder's last heartbeat.
  seen_at  INTEGER NOT NULL
) WITHOUT ROWID;

-- milli: the credits an upload in progress has set aside (milli-credits); gone once it is charged or released.
CREATE TABLE credit_reservations (
  id          TEXT PRIMARY KEY,
  user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  milli       INTEGER NOT NULL CHECK (milli >= 0),
  holder      TEXT NOT NULL,
  created_at  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX credit_reservations_user ON credit_reservations(user_id);
CREATE INDEX credit_reservations_holder ON credit_reservations(holder);
`;
