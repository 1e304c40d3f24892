// An object's canned ACL when it lets everyone read it (x-amz-acl public-read on PutObject, CopyObject,
// CreateMultipartUpload, a POST form's `acl`, or PutObjectAcl): 'public-read', else NULL. Moved with
// the version it belongs to, kept by an upload for the object it completes.
export const sql = `
ALTER TABLE objects ADD COLUMN acl TEXT;
ALTER TABLE object_versions ADD COLUMN acl TEXT;
ALTER TABLE multipart_uploads ADD COLUMN acl TEXT;
`;
