// The asset list's query string, read leniently: SPEC.md §7/§8 say an invalid page or limit falls back
// to safe defaults rather than failing, so nothing here ever throws. Values arrive as the API's query
// parser leaves them (api/query.ts: one string per key, the first of a repeated key) or absent.
import { positiveInt } from '../query.js';
import type { AssetKind, AssetSort, AssetSortField } from '../../db/repos/assets.js';

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
  /** Only this project's assets (the route checks that it is the caller's). */
  projectId?: string;
  /** `sort` (createdAt, name, size) and `order` (asc, desc; by default desc for createdAt, asc otherwise). */
  sort?: AssetSort;
}

const SORT_FIELDS: readonly AssetSortField[] = ['createdAt', 'name', 'size'];

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

export function parseAssetListQuery(query: unknown): AssetListParams {
  const q = (query && typeof query === 'object' ? query : {}) as Record<string, unknown>;
  const page = positiveInt(str(q['page']));
  const limit = positiveInt(str(q['limit']));
  const out: AssetListParams = {
    page: page !== undefined && page <= MAX_PAGE ? page : DEFAULT_PAGE,
    limit: limit === undefined ? DEFAULT_LIMIT : Math.min(limit, MAX_LIMIT),
  };
  const search = str(q['search'])?.slice(0, MAX_SEARCH_CHARS);
  if (search) out.search = search;
  const kind = str(q['kind']);
  if (kind === 'file' || kind === 'artifact') out.kind = kind;
  const projectId = str(q['projectId']);
  if (projectId) out.projectId = projectId;
  const by = str(q['sort']);
  if (SORT_FIELDS.includes(by as AssetSortField)) {
    const order = str(q['order']);
    out.sort = { by: by as AssetSortField, descending: order === 'desc' || (order !== 'asc' && by === 'createdAt') };
  }
  return out;
}

/** pages = ceil(total / limit); 0 when there is nothing. */
export function pageCount(total: number, limit: number): number {
  return total === 0 ? 0 : Math.ceil(total / limit);
}
