// Buckets whose objects the CDN serves publicly (issue 6). Filled in with the edge cache.
export const sql = `SELECT 1;`;
