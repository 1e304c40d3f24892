// SQLite migration 025's twin: an object's public-read ACL.
export const sql = `
ALTER TABLE objects ADD COLUMN acl TEXT COLLATE "C";
ALTER TABLE object_versions ADD COLUMN acl TEXT COLLATE "C";
ALTER TABLE multipart_uploads ADD COLUMN acl TEXT COLLATE "C";
`;
