// Who may reach a bucket besides its keys: its policy (the JSON text its owner put, checked before it
// gets here: src/auth/bucket-policy/parse.ts) and its canned ACL when that opens it to everyone.
import type { SqlExecutor } from '../store/types.js';
import { BucketDocumentRepo } from './bucket-document.js';

/** The canned bucket ACLs that grant more than the owner's FULL_CONTROL; `private` is no row. */
export type PublicAcl = 'public-read' | 'public-read-write';

export class BucketPoliciesRepo extends BucketDocumentRepo<string> {
  constructor(db: SqlExecutor, clock: () => number = Date.now) {
    super(db, 'bucket_policies', clock);
  }
}

export class BucketAclsRepo extends BucketDocumentRepo<PublicAcl> {
  constructor(db: SqlExecutor, clock: () => number = Date.now) {
    super(db, 'bucket_acls', clock);
  }
}
