// The asset list's query string, read leniently: SPEC.md §7/§8 say an invalid page or limit falls back
// to safe defaults rather than failing, so nothing here ever throws. Values arrive as fastify's parser
// leaves them: a string, an array of strings (a repeated key), or absent.
import { positiveInt } from '../api/query.js';
import type { AssetKind } from '../db/repos/assets.js';

export const DEFAULT_PAGE = 1;
export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 200;
/** Far past any real listing, and small enough that (page - 1) * limit stays an exact integer. */
export const MAX_PAGE = 1_000_000_000;
export const MAX_SEARCH_CHARS = 256;

export interface AssetListParams {
  page: number;
  limit: number;
  search?: string;
  kind?: AssetKind;
}

function first(v: unknown): string | undefined {
  if (Array.isArray(v)) return first(v[0]);
  return typeof v === 'string' ? v : undefined;
}

export function parseAssetListQuery(query: unknown): AssetListParams {
  const q = (query && typeof query === 'object' ? query : {}) as Record<string, unknown>;
  const page = positiveInt(first(q['page']));
  const limit = positiveInt(first(q['limit']));
  const out: AssetListParams = {
    page: page !== undefined && page <= MAX_PAGE ? page : DEFAULT_PAGE,
    limit: limit === undefined ? DEFAULT_LIMIT : Math.min(limit, MAX_LIMIT),
  };
  const search = first(q['search'])?.slice(0, MAX_SEARCH_CHARS);
  if (search) out.search = search;
  const kind = first(q['kind']);
  if (kind === 'file' || kind === 'artifact') out.kind = kind;
  return out;
}

/** pages = ceil(total / limit); 0 when there is nothing. */
export function pageCount(total: number, limit: number): number {
  return total === 0 ? 0 : Math.ceil(total / limit);
}
