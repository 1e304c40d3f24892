// From a CDN request to what may be served: the asset or public bucket object it names, the access
// decision (public, a valid signed URL, or nothing), and, for what is served, its representation and
// how the cache reaches its bytes. Every request is decided here from the metadata rows, before the
// cache is asked for anything: the cache never decides who may see what.
import type { IncomingMessage } from 'node:http';
import { contentDisposition } from '../assets/content-disposition.js';
import { SAFETY_HEADERS, SITE_SAFETY_HEADERS, servesAsAttachment } from '../assets/content-safety.js';
import { OCTET_STREAM } from '../assets/content-type.js';
import { openAssetBody } from '../assets/delivery.js';
import { sanitizeFileName } from '../assets/file-name.js';
import type { AppContext } from '../context.js';
import type { AssetRecord } from '../db/repos/assets.js';
import type { Bucket } from '../db/repos/buckets.js';
import type { ObjectRecord } from '../db/repos/objects.js';
import { openObjectBody } from '../storage/object-reader.js';
import { assetCacheKey, objectCacheKey, type CacheObject } from './cdn-cache.js';
import type { Representation } from './representation.js';
import { UrlSigner } from '../assets/signed-url.js';
import { SuspendedOwners } from '../auth/suspended-owners.js';
import type { DeliverySuspensions } from '../credits/delivery-suspension.js';
import { parseBucketTarget, parseCdnTarget, type AssetTarget, type BucketObjectTarget } from './targets.js';

/** Signed (private) responses may sit in no shared cache. */
const SIGNED_CACHE_CONTROL = 'private, no-store';

/** What the request log learns about a request as it is resolved. */
export interface TargetFacts {
  assetId: string | null;
  ownerId: string | null;
  bucket: string | null;
  key: string | null;
}

export interface Served {
  rep: Representation;
  cache: CacheObject;
  /** Set for an asset: each body served is a usage event. */
  asset?: AssetRecord;
}

/** `payment-required`: the owner's credits ran out and atZero 'suspend-delivery' stopped their delivery (402). */
export type Resolution = { kind: 'not-found' } | { kind: 'forbidden' } | { kind: 'payment-required' } | { kind: 'found'; served: Served };

const NOT_FOUND: Resolution = { kind: 'not-found' };
const PAYMENT_REQUIRED: Resolution = { kind: 'payment-required' };

export class CdnResolver {
  private readonly signer: UrlSigner;
  private readonly suspended: SuspendedOwners;
  /** Set only with credits.atZero 'suspend-delivery': owners whose delivery stopped for want of credits. */
  private readonly unpaid: DeliverySuspensions | undefined;
  /**
   * A public asset's Served, per row of the asset directory (which reuses a found row for a second): the
   * representation and its headers are made once for all the requests of that second, not per request.
   */
  private readonly publicAssets = new WeakMap<AssetRecord, Served & { asset: AssetRecord }>();

  constructor(private readonly ctx: AppContext) {
    this.signer = UrlSigner.fromMasterKey(ctx.masterKey, ctx.clock);
    this.suspended = new SuspendedOwners(ctx.repos);
    this.unpaid = ctx.deliverySuspensions;
  }

  /** Whether the owner's delivery stopped for want of credits: false at once unless 'suspend-delivery'. */
  private async unpaidOwner(ownerId: string): Promise<boolean> {
    const { unpaid } = this;
    return unpaid !== undefined && (unpaid.held(ownerId) ?? (await unpaid.has(ownerId)));
  }

  /**
   * Call read() on the result's cache object right after the await, before any other I/O: the
   * metadata row was read here, and opening its bytes then leases them (bytes removed meanwhile by
   * another process are a 'retry' of the sender).
   */
  async resolve(req: IncomingMessage, facts: TargetFacts): Promise<Resolution> {
    const asset = parseCdnTarget(req.url);
    if (asset) return this.asset(asset, facts);
    const object = parseBucketTarget(req.url);
    if (object) return this.object(object, facts);
    return NOT_FOUND;
  }

  /**
   * The hot path's resolve, in this tick: a public asset named without a signature whose row and
   * owner's standing this process holds (the asset directory's second, the suspension answer's).
   * undefined for anything else, facts untouched: resolve() decides it.
   */
  heldPublicAsset(req: IncomingMessage, facts: TargetFacts): (Served & { asset: AssetRecord }) | undefined {
    const target = parseCdnTarget(req.url);
    if (target === undefined || target.expires !== undefined || target.signature !== undefined) return undefined;
    const asset = this.ctx.assetDirectory.held(target.id);
    if (asset === undefined || asset.fileName !== target.fileName || asset.visibility !== 'public') return undefined;
    if (this.suspended.held(asset.userId) !== false) return undefined;
    if (this.unpaid !== undefined && this.unpaid.held(asset.userId) !== false) return undefined;
    facts.assetId = asset.id;
    facts.ownerId = asset.userId;
    return this.publicAsset(asset);
  }

  private async asset(target: AssetTarget, facts: TargetFacts): Promise<Resolution> {
    const { ctx } = this;
    const asset = await ctx.assetDirectory.byId(target.id);
    if (!asset || asset.fileName !== target.fileName) return NOT_FOUND;
    facts.assetId = asset.id;
    facts.ownerId = asset.userId;
    const signed =
      target.expires !== undefined && target.signature !== undefined && this.signer.verify(asset, target.expires, target.signature);
    if (!signed && asset.visibility !== 'public') return NOT_FOUND;
    // 403 only for what this caller could otherwise see: it reveals nothing a 404 would hide.
    if (await this.suspended.has(asset.userId)) return { kind: 'forbidden' };
    // Signed links too: they are delivery to whoever holds them. The owner's API download is not the CDN.
    if (await this.unpaidOwner(asset.userId)) return PAYMENT_REQUIRED;
    if (signed) return { kind: 'found', served: this.assetVersion(asset, true) };
    return { kind: 'found', served: this.publicAsset(asset) };
  }

  private publicAsset(asset: AssetRecord): Served & { asset: AssetRecord } {
    let served = this.publicAssets.get(asset);
    if (served === undefined) {
      served = this.assetVersion(asset, false);
      this.publicAssets.set(asset, served);
    }
    return served;
  }

  /** How an asset is served: its representation and how the cache reaches its bytes. */
  private assetVersion(asset: AssetRecord, signed: boolean): Served & { asset: AssetRecord } {
    const { ctx } = this;
    // Active content (HTML, SVG, XML, JS, PDF, wasm) is only ever a download, even through a signed URL.
    const active = asset.activeContent || servesAsAttachment({ contentType: asset.contentType, fileName: asset.fileName });
    const rep: Representation = {
      etag: asset.etag,
      lastModified: asset.updatedAt,
      size: asset.size,
      contentType: asset.contentType,
      contentEncoding: null,
      contentDisposition: contentDisposition(active ? 'attachment' : 'inline', asset.fileName),
      cacheControl: signed ? SIGNED_CACHE_CONTROL : ctx.config.cdn.defaultCacheControl,
      safety: SAFETY_HEADERS,
      extra: {},
    };
    const cache: CacheObject = {
      key: assetCacheKey(asset.id),
      etag: asset.etag,
      size: asset.size,
      owner: asset.userId,
      open: (range) => openAssetBody(ctx, asset, range),
    };
    return { rep, cache, asset };
  }

  private async object(target: BucketObjectTarget, facts: TargetFacts): Promise<Resolution> {
    const { ctx } = this;
    // Straight from the database, not the S3 path's bucket directory: making a bucket private takes
    // effect on the next request.
    const bucket = await ctx.repos.buckets.getByName(target.bucket);
    if (!bucket?.public) return NOT_FOUND;
    // The row only: a small object's bytes are read from the database when a fill opens them, not on
    // every request (hits, HEAD, 304 and 403 never need them).
    const rec = await ctx.objects.get(bucket.id, target.key);
    if (!rec) return NOT_FOUND;
    facts.bucket = bucket.name;
    facts.key = rec.key;
    facts.ownerId = bucket.ownerId;
    if (await this.suspended.has(bucket.ownerId)) return { kind: 'forbidden' };
    if (await this.unpaidOwner(bucket.ownerId)) return PAYMENT_REQUIRED;
    return { kind: 'found', served: objectVersion(ctx, bucket, rec, 'cdn') };
  }
}

/**
 * How a bucket object is served: its representation and how the cache reaches its bytes. On the CDN
 * (`cdn`), a shared origin, active or encoded content is only ever an attachment and every answer is
 * sandboxed. A project hostname's bucket site (`site`, src/edge/bucket-site.ts) is the user's own
 * website on its own origin: HTML and scripts are served inline with their stored type, as any web
 * host would, since nothing of ours or of another user shares that origin.
 */
export function objectVersion(ctx: AppContext, bucket: Pick<Bucket, 'id' | 'ownerId'>, rec: ObjectRecord, door: 'cdn' | 'site'): Served {
  const contentType = rec.contentType || OCTET_STREAM;
  // On the CDN the key's last segment stands in for a file name; active or encoded content is never inline there.
  const active = door === 'cdn' && servesAsAttachment({ contentType, fileName: sanitizeFileName(rec.key), contentEncoding: rec.contentEncoding });
  const extra: Record<string, string> = {};
  if (rec.contentLanguage) extra['content-language'] = rec.contentLanguage;
  if (rec.expires) extra.expires = rec.expires;
  const rep: Representation = {
    etag: rec.etag,
    lastModified: rec.lastModified,
    size: rec.size,
    contentType,
    contentEncoding: rec.contentEncoding,
    contentDisposition: active ? contentDisposition('attachment', sanitizeFileName(rec.key)) : (rec.contentDisposition ?? undefined),
    cacheControl: rec.cacheControl ?? ctx.config.cdn.defaultCacheControl,
    safety: door === 'cdn' ? SAFETY_HEADERS : SITE_SAFETY_HEADERS,
    extra,
  };
  const cache: CacheObject = {
    key: objectCacheKey(bucket.id, rec.key),
    etag: rec.etag,
    size: rec.size,
    owner: bucket.ownerId,
    open: (range) => openObjectBody(ctx, rec, range ? { range } : {}),
  };
  return { rep, cache };
}
