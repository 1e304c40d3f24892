import { sql as initial } from './001-initial.js';
import { sql as multipart } from './002-multipart.js';
import { sql as bucketCors } from './003-bucket-cors.js';
import { sql as inlineBlobs } from './004-inline-blobs.js';
import { sql as management } from './005-management.js';
import { sql as cdnRequestLog } from './006-cdn-request-log.js';
import { sql as publicBuckets } from './007-public-buckets.js';
import { sql as assetActiveContent } from './008-asset-active-content.js';
import { sql as corruptBlobs } from './009-corrupt-blobs.js';
import { sql as blobCrc32c } from './010-blob-crc32c.js';
import { sql as domains } from './011-domains.js';
import { sql as edge } from './012-edge.js';
import { sql as userPasswords } from './013-user-passwords.js';
import { sql as dashboardSessions } from './014-dashboard-sessions.js';
import { sql as objectTagging } from './015-object-tagging.js';
import { sql as versioning } from './016-versioning.js';
import { sql as cacheInvalidations } from './017-cache-invalidations.js';
import { sql as creditReservations } from './018-credit-reservations.js';
import { sql as rateLimitCounters } from './019-rate-limit-counters.js';
import { sql as blobRemovals } from './020-blob-removals.js';
import { sql as bucketTagging } from './021-bucket-tagging.js';
import { sql as bucketAccess } from './022-bucket-access.js';
import { sql as bucketLifecycle } from './023-bucket-lifecycle.js';
import { sql as notifications } from './024-notifications.js';
import { sql as objectAcl } from './025-object-acl.js';
import { sql as transferCharges } from './026-transfer-charges.js';

/** Numbered migrations, applied in order; PRAGMA user_version records the last applied. Never edit one that has shipped. */
export const MIGRATIONS: readonly string[] = [initial, multipart, bucketCors, inlineBlobs, management, cdnRequestLog, publicBuckets, assetActiveContent, corruptBlobs, blobCrc32c, domains, edge, userPasswords, dashboardSessions, objectTagging, versioning, cacheInvalidations, creditReservations, rateLimitCounters, blobRemovals, bucketTagging, bucketAccess, bucketLifecycle, notifications, objectAcl, transferCharges];
