// Sessions of the account dashboard (src/auth/sessions.ts). The cookie carries a random token; the
// table keeps its SHA-256 only, so a copy of the database signs nobody in. A row is a live session:
// signing out, a new password or `users signout` deletes rows, and expiry is checked on every use.
export const sql = `
CREATE TABLE dashboard_sessions (
  token_hash TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  csrf_token TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  last_seen_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX dashboard_sessions_user ON dashboard_sessions (user_id);
`;
