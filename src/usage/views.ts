// Usage events and credit ledger entries as the API shows them (SPEC.md 2.7, 2.8).
import type { UsageEvent as UsageEventView, LedgerEntry as LedgerEntryView } from '../api/v3/schemas.js';
import type { LedgerEntry } from '../db/repos/credits.js';
import type { UsageEvent } from '../db/repos/usage.js';
import { fromMilli } from '../credits/credits.js';

export function usageEventView(e: UsageEvent): UsageEventView {
  return {
    id: e.id,
    userId: e.userId,
    assetId: e.assetId,
    eventType: e.eventType,
    source: e.source,
    bytes: e.bytes,
    hostname: e.hostname,
    country: e.country,
    statusCode: e.statusCode,
    metadata: { key: e.metadata.key },
    createdAt: new Date(e.createdAt).toISOString(),
  };
}

export function ledgerEntryView(e: LedgerEntry): LedgerEntryView {
  return {
    id: e.id,
    userId: e.userId,
    assetId: e.assetId,
    eventType: e.eventType,
    bytes: e.bytes,
    rate: fromMilli(e.rateMilli),
    credits: fromMilli(e.creditsMilli),
    balanceAfter: fromMilli(e.balanceAfterMilli),
    metadata: e.metadata,
    createdAt: new Date(e.createdAt).toISOString(),
  };
}
