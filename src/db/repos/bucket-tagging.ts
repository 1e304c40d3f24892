// Bucket tag sets, one JSON document per bucket (validated before they get here: src/s3/tagging.ts).
import type { SqlExecutor } from '../store/types.js';
import { BucketDocumentRepo } from './bucket-document.js';
import type { ObjectTag } from './objects.js';

export class BucketTaggingRepo extends BucketDocumentRepo<ObjectTag[]> {
  constructor(db: SqlExecutor, clock: () => number = Date.now) {
    super(db, 'bucket_tagging', clock);
  }
}
