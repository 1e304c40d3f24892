// Whether an asset's bytes were judged active content on upload (by type, name or sniffed bytes,
// src/assets/content-safety.ts). The CDN serves such an asset only as an attachment, even when its
// declared type and name look harmless (a PDF uploaded as image/png). Rows from before: 0, and the CDN
// still judges them by type and name.
export const sql = `
ALTER TABLE assets ADD COLUMN active_content INTEGER NOT NULL DEFAULT 0 CHECK (active_content IN (0, 1));
`;
