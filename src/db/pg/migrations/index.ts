import { sql as schema } from './001-schema.js';
import { sql as changeNotify } from './002-change-notify.js';
import { sql as rateLimitCounters } from './003-rate-limit-counters.js';
import { sql as blobRemovals } from './004-blob-removals.js';
import { sql as rowNotify } from './005-row-notify.js';
import { sql as bucketTagging } from './006-bucket-tagging.js';
import { sql as bucketAccess } from './007-bucket-access.js';
import { sql as bucketLifecycle } from './008-bucket-lifecycle.js';
import { sql as notifications } from './009-notifications.js';
import { sql as objectAcl } from './010-object-acl.js';
import { sql as transferCharges } from './011-transfer-charges.js';
import { sql as storageMetering } from './012-storage-metering.js';
import { sql as hostnameTls } from './013-hostname-tls.js';
import { sql as depletedIndex } from './014-depleted-index.js';
import { sql as usageEventsIndex } from './015-usage-events-index.js';

/**
 * Numbered PostgreSQL migrations, applied in order by migrate.ts; schema_migrations records each one
 * applied. Never edit one that has shipped. Every SQLite migration (src/db/migrations) gets its twin
 * here: test/contract/pg-schema.test.ts fails while the two schemas differ. 002 and 005 are PostgreSQL's
 * own (NOTIFY for node-to-node coherence: SQLite has data_version instead, and no row cache).
 */
export const PG_MIGRATIONS: readonly string[] = [schema, changeNotify, rateLimitCounters, blobRemovals, rowNotify, bucketTagging, bucketAccess, bucketLifecycle, notifications, objectAcl, transferCharges, storageMetering, hostnameTls, depletedIndex, usageEventsIndex];

/** Tables the migrations fill with a row of their own (the roll-up state): a copy replaces it, and it does not make a database "in use". */
export const SEEDED_TABLES: readonly string[] = ['cdn_rollup_state'];
