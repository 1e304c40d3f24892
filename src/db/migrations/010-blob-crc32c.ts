// The CRC32C of each backend blob, recorded with the row that references it (an object of one blob, a
// part, an asset; a multipart object's manifest carries its parts' in its JSON): reads of a whole blob
// are checked against it (src/storage/blob-digest.ts). NULL for rows written before it was recorded,
// which are checked against the MD5 of their ETag instead.
export const sql = `
ALTER TABLE objects ADD COLUMN blob_crc32c INTEGER;
ALTER TABLE multipart_parts ADD COLUMN crc32c INTEGER;
ALTER TABLE assets ADD COLUMN crc32c INTEGER;
`;
