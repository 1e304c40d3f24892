// The memory tier: whole bodies of small objects (at most memoryEntryMaxBytes) in an LRU bounded by
// bytes (lru-cache's maxSize). Compressed variants are entries of their own, under the object's key
// plus the coding, so they are counted, bounded and evicted like any body.
import { LRUCache } from 'lru-cache';
import type { Coding } from './compression.js';

export interface MemoryEntry {
  /** The version held: the object's ETag when it was cached. */
  etag: string;
  /** The user who owns the object (purge of "all my assets"). */
  owner: string;
  body: Buffer;
  /** Unix milliseconds when the identity body was cached (Age). */
  cachedAt: number;
}

export type Variant = 'identity' | Coding;

/** Bookkeeping counted per entry, so that empty bodies still take room. */
export const ENTRY_OVERHEAD = 256;

const VARIANTS: readonly Coding[] = ['gzip', 'br'];
/** Object keys never contain NUL (S3 keys refuse it, asset ids are hex): a safe separator. */
const SEP = '\u0000';

function slot(key: string, variant: Variant): string {
  return variant === 'identity' ? key : `${key}${SEP}${variant}`;
}

export class MemoryTier {
  private readonly lru: LRUCache<string, MemoryEntry> | undefined;

  constructor(
    private readonly maxBytes: number,
    private readonly entryMaxBytes: number,
  ) {
    if (maxBytes > 0 && entryMaxBytes > 0) {
      this.lru = new LRUCache<string, MemoryEntry>({
        maxSize: maxBytes,
        maxEntrySize: Math.min(maxBytes, entryMaxBytes + ENTRY_OVERHEAD),
        sizeCalculation: (e) => e.body.length + ENTRY_OVERHEAD,
      });
    }
  }

  /** Whether a body of `size` bytes may be held here. */
  accepts(size: number): boolean {
    return this.lru !== undefined && size <= this.entryMaxBytes && size + ENTRY_OVERHEAD <= this.maxBytes;
  }

  /** The body of `variant`, if held (and marks it recently used). */
  get(key: string, variant: Variant = 'identity'): MemoryEntry | undefined {
    return this.lru?.get(slot(key, variant));
  }

  /** Like get, without touching the recency order. */
  peek(key: string, variant: Variant = 'identity'): MemoryEntry | undefined {
    return this.lru?.peek(slot(key, variant));
  }

  set(key: string, variant: Variant, entry: MemoryEntry): void {
    if (variant === 'identity') this.dropVariants(key);
    this.lru?.set(slot(key, variant), entry);
  }

  /** Drops the object and its variants; true when its identity body was held. */
  delete(key: string): boolean {
    this.dropVariants(key);
    return this.lru?.delete(key) ?? false;
  }

  /** Identity entries, for purges that match on key prefix or owner. */
  *objects(): Generator<[string, MemoryEntry]> {
    if (!this.lru) return;
    for (const [k, e] of this.lru.entries()) if (!k.includes(SEP)) yield [k, e];
  }

  stats(): { bytes: number; entries: number } {
    return { bytes: this.lru?.calculatedSize ?? 0, entries: this.lru?.size ?? 0 };
  }

  private dropVariants(key: string): void {
    for (const v of VARIANTS) this.lru?.delete(slot(key, v));
  }
}
