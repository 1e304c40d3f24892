// Object tags (PutObjectTagging, x-amz-tagging). NULL or a JSON array of [key, value] pairs in the
// order they were given; an upload keeps the tags of x-amz-tagging for the object it completes.
export const sql = `
ALTER TABLE objects ADD COLUMN tagging TEXT;
ALTER TABLE multipart_uploads ADD COLUMN tagging TEXT;
`;
