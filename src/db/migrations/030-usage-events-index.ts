// usage_events_user (user_id, seq) served no query: seq is the rowid, so usage_events_user_time
// (user_id, created_at) holds it too and answers every read of a user's events, their order
// included (EXPLAIN QUERY PLAN of each of src/db/repos/usage.ts's reads and of the users' cascade).
// It cost every event's insert a third index entry, a CDN download's among them (issue 30).
export const sql = `
DROP INDEX IF EXISTS usage_events_user;
`;
