// How an asset is shown to clients (SPEC.md 2.1): the display key and the CDN URL, never the blob id.
import type { AssetRecord } from '../db/repos/assets.js';
import type { Asset, AssetListItem } from '../api/v3/schemas.js';

/** The display key: `<asset id>/<file name>`. It is also the path of the asset on the CDN host. */
export function displayKey(a: Pick<AssetRecord, 'id' | 'fileName'>): string {
  return `${a.id}/${a.fileName}`;
}

/** `<cdn base>/<asset id>/<file name, percent-encoded>`. */
export function publicUrl(cdnBase: string, a: Pick<AssetRecord, 'id' | 'fileName'>): string {
  return `${cdnBase}/${a.id}/${encodeURIComponent(a.fileName)}`;
}

export interface ViewContext {
  cdnBase: string;
  storageName: string;
}

export function assetView(a: AssetRecord, v: ViewContext): Asset {
  return {
    id: a.id,
    userId: a.userId,
    projectId: a.projectId,
    deploymentId: a.deploymentId,
    storageName: v.storageName,
    key: displayKey(a),
    fileName: a.fileName,
    contentType: a.contentType,
    size: a.size,
    publicUrl: publicUrl(v.cdnBase, a),
    sha256: a.sha256,
    etag: a.etag,
    visibility: a.visibility,
    kind: a.kind,
    metadata: { 'file-name': a.fileName, kind: a.kind, sha256: a.sha256, visibility: a.visibility },
    createdAt: new Date(a.createdAt).toISOString(),
    updatedAt: new Date(a.updatedAt).toISOString(),
  };
}

export function assetListItem(a: AssetRecord, v: ViewContext): AssetListItem {
  const { userId: _u, projectId: _p, deploymentId: _d, sha256: _s, etag: _e, metadata: _m, ...item } = assetView(a, v);
  return item;
}
