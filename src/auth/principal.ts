// Who a verified request acts as: derived from the access key that signed it.

export type Principal =
  | { kind: 'root'; userId: string; accessKeyId: string }
  | { kind: 'account'; userId: string; accessKeyId: string }
  | {
      kind: 'bucket';
      userId: string;
      accessKeyId: string;
      bucketId: string;
      bucketName: string;
      permission: 'read' | 'read_write';
    };
