// What the request log says each owner's public traffic was, per hour, and what of it the ledger has
// charged (src/credits/transfer-settlement.ts).
import { HOUR_MS } from './traffic.js';
import { CREDITS_DEPLETED } from './hostname-model.js';
import type { SqlExecutor } from '../store/types.js';

export interface OwnerHourBytes {
  ownerId: string;
  /** Unix ms of the hour's start. */
  hour: number;
  bytes: number;
}

// Every surface of the request log (CDN hits and misses, proxied responses of project hostnames); rows
// of no owner are nobody's to pay, nor the proxy's 402s for an owner whose credits ran out (the CDN's
// send no counted body): a suspended owner's balance does not sink further for being refused.
const SERVED = `SELECT owner_id AS "ownerId", (time / ${HOUR_MS}) * ${HOUR_MS} AS hour, sum(bytes_sent) AS bytes
  FROM cdn_requests WHERE time >= ? AND time < ? AND owner_id IS NOT NULL AND owner_id <> '' AND decision <> '${CREDITS_DEPLETED}'
  GROUP BY 1, 2 ORDER BY 2, 1`;
const CHARGED = 'SELECT bytes FROM transfer_charges WHERE owner_id = ? AND hour = ?';
const FIRST = 'INSERT INTO transfer_charges (owner_id, hour, bytes) VALUES (?, ?, ?) ON CONFLICT (owner_id, hour) DO NOTHING';
const ADVANCE = 'UPDATE transfer_charges SET bytes = ? WHERE owner_id = ? AND hour = ? AND bytes = ?';

export class TransferChargesRepo {
  constructor(private readonly db: SqlExecutor) {}

  /** Bytes sent per owner and hour by requests in [fromMs, toMs), oldest hour first. */
  async served(fromMs: number, toMs: number): Promise<OwnerHourBytes[]> {
    const rows = await this.db.all<OwnerHourBytes>(SERVED, [fromMs, toMs]);
    return rows.map((r) => ({ ownerId: r.ownerId, hour: Number(r.hour), bytes: Number(r.bytes) }));
  }

  /** Bytes of the owner's hour charged so far. */
  async charged(ownerId: string, hour: number): Promise<number> {
    const row = await this.db.get<{ bytes: number }>(CHARGED, [ownerId, hour]);
    return row ? Number(row.bytes) : 0;
  }

  /** Moves the charged bytes from `from` to `to`; false when another settlement moved them first. */
  async advance(ownerId: string, hour: number, from: number, to: number): Promise<boolean> {
    if (from === 0 && (await this.db.run(FIRST, [ownerId, hour, to])).changes > 0) return true;
    return (await this.db.run(ADVANCE, [to, ownerId, hour, from])).changes > 0;
  }
}
