// The CDN edge cache (issue 6): a memory tier and a disk tier in front of the storage backend. To be
// implemented; the purge methods are called wherever an object or asset changes or goes away.

export class EdgeCache {
  /** Drops every cached copy of an asset. */
  purgeAsset(_assetId: string): void {}

  /** Drops the cached copy of a public bucket's object. */
  purgeObject(_bucketId: string, _key: string): void {}

  async close(): Promise<void> {}
}
