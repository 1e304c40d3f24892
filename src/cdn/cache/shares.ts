// A serving process's place among the N workers of `serve --workers N`. The disk tier is one cache for
// all of them (disk-tier.ts: <cdn-cache> itself, whatever N); what is divided among them is what each
// process holds in its own memory (context/shares.ts shareLimits: the memory tier, the upload budget).
/** A serving process's slot among its cluster's workers: 1..of. */
export interface ProcessShare {
  slot: number;
  of: number;
}

export function assertShare(share: ProcessShare): void {
  if (!Number.isSafeInteger(share.of) || share.of < 1 || !Number.isSafeInteger(share.slot) || share.slot < 1 || share.slot > share.of) {
    throw new Error(`a process share must be slot 1..of, got ${share.slot} of ${share.of}`);
  }
}
