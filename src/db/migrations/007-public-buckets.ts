// Buckets whose objects the CDN serves to anyone at /b/<bucket>/<key> (issue 6). Private (0) unless
// the owner turns it on: the CLI `buckets public|private` or PUT /api/v3/buckets/:bucket/public.
export const sql = `
ALTER TABLE buckets ADD COLUMN public INTEGER NOT NULL DEFAULT 0 CHECK (public IN (0, 1));
`;
