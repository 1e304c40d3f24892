// Per-bucket CORS rules, stored as one JSON document per bucket (validated before they get here).
import type { SqlExecutor } from '../store/types.js';
import { BucketDocumentRepo } from './bucket-document.js';

/** One CORSRule, as validated by src/s3/cors.ts. */
export interface CorsRule {
  id?: string;
  allowedOrigins: string[];
  allowedMethods: string[];
  allowedHeaders: string[];
  exposeHeaders: string[];
  maxAgeSeconds?: number;
}

export class BucketCorsRepo extends BucketDocumentRepo<CorsRule[]> {
  constructor(db: SqlExecutor, clock: () => number = Date.now) {
    super(db, 'bucket_cors', clock);
  }
}
