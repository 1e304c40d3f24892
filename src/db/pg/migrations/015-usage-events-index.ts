// SQLite migration 030's twin: the unused (user_id, seq) index of usage_events goes; (user_id,
// created_at) serves every read of a user's events.
export const sql = `
DROP INDEX IF EXISTS usage_events_user;
`;
