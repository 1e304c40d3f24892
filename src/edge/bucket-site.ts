// A project hostname whose origin is one of its owner's buckets ({ kind: 'bucket' } in model.ts),
// served as a static website the way S3 website hosting does it: the path, percent-decoded and without
// its leading '/', is the key; a path that ends in '/' (or is empty) gets the index document appended;
// a key that is missing while `<key>/<index document>` exists is a 301 to the slash form; anything
// else missing is the error document with status 404 when there is one, else a bare 404. GET and HEAD
// only (405 otherwise).
//
// Objects are answered like the CDN's public bucket objects (src/cdn/send-version.ts: conditionals,
// one range, the edge cache under the object's own cache key, blob leases, X-Cache), with one
// deliberate difference: the CDN hostname is shared by every user, so there active content is an
// attachment and every answer carries a sandbox CSP; a project hostname is the user's own site on
// its own origin, so pages and scripts are served inline with their stored Content-Type, with
// nosniff only (resolve.ts objectVersion, 'site').
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CacheStatus } from '../db/repos/request-records.js';
import { objectVersion } from '../cdn/resolve.js';
import { createVersionSender, notFound, plain, type SendFacts } from '../cdn/send-version.js';
import { SuspendedOwners } from '../auth/suspended-owners.js';
import type { AppContext } from '../context.js';
import type { Bucket } from '../db/repos/buckets.js';
import type { ObjectRecord } from '../db/repos/objects.js';
import { isMetadataBusy, isMetadataUnavailable, isStorageUnavailable } from '../errors/s3-errors.js';
import type { Origin } from '../db/repos/hostname-model.js';

export type BucketOrigin = Extract<Origin, { kind: 'bucket' }>;

/** What the request log needs of a site request. */
export interface SiteOutcome {
  status: number;
  bytesSent: number;
  cacheStatus: CacheStatus | null;
}

export type BucketSite = (req: IncomingMessage, res: ServerResponse, origin: BucketOrigin, ownerId: string) => Promise<SiteOutcome>;

/** S3's limit on a key, in UTF-8 bytes: a longer path names nothing. */
const MAX_KEY_BYTES = 1024;

/** Lookups retried when a blob vanished between the row and the read (another process removed it). */
const ATTEMPTS = 3;

export interface SiteTarget {
  /** The key asked for, the index document appended to a directory path. */
  key: string;
  /** The path ended in '/' (or was empty): no 301 to try. */
  directory: boolean;
  /** '' or '?...', kept on a redirect. */
  query: string;
}

/** The object a request target names; undefined when the target is not a path (bad percent-escapes, not origin- or absolute-form). */
export function siteTarget(url: string | undefined, indexDocument: string): SiteTarget | undefined {
  if (url === undefined) return undefined;
  let raw = url;
  if (!raw.startsWith('/')) {
    // Absolute-form (`GET http://host/path`), which a server must accept.
    try {
      const parsed = new URL(raw);
      raw = parsed.pathname + parsed.search;
    } catch {
      return undefined;
    }
  }
  const q = raw.indexOf('?');
  const path = q === -1 ? raw : raw.slice(0, q);
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return undefined;
  }
  const key = decoded.slice(1);
  const directory = key === '' || key.endsWith('/');
  return { key: directory ? key + indexDocument : key, directory, query: q === -1 ? '' : raw.slice(q) };
}

/**
 * The Location of a redirect to `<key>/`: every segment escaped, and a leading '/' of the key too, so
 * the Location is always a path on this host (`//evil.example/` would be another host to a browser).
 */
export function directoryLocation(key: string, query: string): string {
  const path = key.split('/').map(encodeURIComponent).join('/').replace(/^\//, '%2F');
  return `/${path}/${query}`;
}

export function createBucketSite(ctx: AppContext): BucketSite {
  const send = createVersionSender(ctx);
  const suspended = new SuspendedOwners(ctx.repos);

  const objectAt = async (bucket: Bucket, key: string): Promise<ObjectRecord | undefined> =>
    Buffer.byteLength(key) > MAX_KEY_BYTES ? undefined : ctx.objects.get(bucket.id, key);

  /** One attempt: 'retry' when the bytes vanished before anything was sent. */
  const attempt = async (req: IncomingMessage, res: ServerResponse, bucket: Bucket, origin: BucketOrigin, target: SiteTarget, facts: SendFacts): Promise<'done' | 'retry'> => {
    // Each row is sent right after it was read: its bytes are leased (or found gone: a retry) at once.
    const rec = await objectAt(bucket, target.key);
    if (rec) return (await send(req, res, objectVersion(ctx, bucket, rec, 'site'), facts)) === 'retry' ? 'retry' : 'done';
    if (!target.directory && (await objectAt(bucket, `${target.key}/${origin.indexDocument}`))) {
      plain(res, req, 301, 'Moved Permanently', { location: directoryLocation(target.key, target.query) });
      return 'done';
    }
    const errorDoc = origin.errorDocument === null ? undefined : await objectAt(bucket, origin.errorDocument);
    if (errorDoc) return (await send(req, res, objectVersion(ctx, bucket, errorDoc, 'site'), facts, { status: 404 })) === 'retry' ? 'retry' : 'done';
    notFound(req, res);
    return 'done';
  };

  const serve = async (req: IncomingMessage, res: ServerResponse, origin: BucketOrigin, ownerId: string, facts: SendFacts): Promise<void> => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return plain(res, req, 405, 'Method Not Allowed', { allow: 'GET, HEAD' });
    // Read on every request: a bucket deleted or given away stops being served at once.
    const bucket = await ctx.repos.buckets.getById(origin.bucketId);
    if (!bucket || bucket.ownerId !== ownerId) return notFound(req, res);
    if (await suspended.has(ownerId)) return plain(res, req, 403, 'Forbidden');
    const target = siteTarget(req.url, origin.indexDocument);
    if (!target) return plain(res, req, 400, 'Bad Request');
    for (let i = 0; i < ATTEMPTS; i++) {
      if ((await attempt(req, res, bucket, origin, target, facts)) === 'done') return;
    }
    // Still gone: the object went away under us.
    facts.cacheStatus = null;
    notFound(req, res);
  };

  return async (req, res, origin, ownerId) => {
    const facts: SendFacts = { cacheStatus: null, bytesSent: 0 };
    try {
      await serve(req, res, origin, ownerId, facts);
    } catch (err) {
      ctx.log.error({ err, url: req.url }, 'bucket site request failed');
      // The storage backend's 503 (upstream down) keeps its Retry-After; nothing else of it is shown.
      if (!res.headersSent && isStorageUnavailable(err)) plain(res, req, 503, 'Service Unavailable', err.headers);
      // The metadata database locked by another process, or PostgreSQL away: a retry may succeed.
      else if (!res.headersSent && (isMetadataBusy(err) || isMetadataUnavailable(err))) plain(res, req, 503, 'Service Unavailable', { 'retry-after': '1' });
      else if (!res.headersSent) plain(res, req, 500, 'Internal Server Error');
      else res.destroy();
    }
    return { status: res.statusCode, bytesSent: facts.bytesSent, cacheStatus: facts.cacheStatus };
  };
}
