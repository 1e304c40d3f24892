// Who a request acts as: derived from the access key that signed it, or nobody (an unsigned request,
// which only a bucket's policy or canned ACL can let in: src/buckets/bucket-access.ts).

export type Principal =
  | { kind: 'root'; userId: string; userName: string; accessKeyId: string }
  | { kind: 'account'; userId: string; userName: string; accessKeyId: string }
  | {
      kind: 'bucket';
      userId: string;
      userName: string;
      accessKeyId: string;
      bucketId: string;
      bucketName: string;
      permission: 'read' | 'read_write';
    }
  | { kind: 'anonymous' };

export type SignedPrincipal = Exclude<Principal, { kind: 'anonymous' }>;

export const ANONYMOUS: Principal = Object.freeze({ kind: 'anonymous' });
