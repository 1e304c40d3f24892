// The domain reseller's endpoints (scope domains:read, SPEC.md §4), each with its own rate limit per
// API key (§8, domains.rateLimits): the catalogue, the popular list, TLD search and domain search.
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { DomainQueryError } from '../../domains/normalize.js';
import type { DomainSearch } from '../../domains/search.js';
import { ApiError } from '../errors.js';
import { type RouteModule } from '../route-module.js';
import { DomainSearchResponse, ERROR_RESPONSES, ErrorBody, Tld, TldMatch } from './schemas.js';

const RESPONSES = { ...ERROR_RESPONSES, 429: ErrorBody } as const;
const TldsResponse = Type.Object({ success: Type.Boolean(), tlds: Type.Array(Tld) });
const TldSearchResponse = Type.Object({ success: Type.Boolean(), query: Type.String(), tlds: Type.Array(TldMatch) });
const SearchBody = Type.Object({ query: Type.String({ maxLength: 1024 }) }, { examples: [{ query: 'example.com' }] });
const TldQuery = Type.Object({ q: Type.String({ description: 'An extension: io, .io, co.uk' }) });
const TAGS = ['domains'];

/** A search the caller got wrong is a 400 saying what is wrong. */
function badQuery(err: unknown): never {
  if (err instanceof DomainQueryError) throw new ApiError(400, 'invalid_request', err.message);
  throw err;
}

export const domainRoutes: RouteModule = (app, { ctx, requireScope }) => {
  const limits = ctx.config.domains.rateLimits;
  const limited = (max: number) => ({ rateLimit: { max, timeWindow: limits.windowSeconds * 1000 } });
  // Made on the first domain request (domains/lazy-search.ts).
  const search = (): Promise<DomainSearch> => ctx.domains();

  const tldsSchema = { operationId: 'listTlds', summary: 'The TLD catalogue with prices and active promotions', tags: TAGS, response: { 200: TldsResponse, ...RESPONSES } };
  app.get('/api/v3/domains/tlds', { onRequest: requireScope('domains:read'), config: limited(limits.tlds), schema: tldsSchema }, async () => ({
    success: true,
    tlds: await (await search()).tlds(),
  }));

  const popularSchema = { operationId: 'listPopularTlds', summary: 'The popular TLDs, in their order', tags: TAGS, response: { 200: TldsResponse, ...RESPONSES } };
  app.get('/api/v3/domains/tlds/popular', { onRequest: requireScope('domains:read'), config: limited(limits.popular), schema: popularSchema }, async () => ({
    success: true,
    tlds: await (await search()).popular(),
  }));

  app.get<{ Querystring: Record<string, unknown> }>(
    '/api/v3/domains/tlds/search',
    {
      onRequest: requireScope('domains:read'),
      config: limited(limits.tldSearch),
      schema: { operationId: 'searchTlds', summary: 'TLDs matching an extension, exact match first', tags: TAGS, documentedQuery: TldQuery, response: { 200: TldSearchResponse, ...RESPONSES } },
    },
    async (request: FastifyRequest<{ Querystring: Record<string, unknown> }>) => {
      const q = request.query.q;
      if (typeof q !== 'string' || q.trim() === '') throw new ApiError(400, 'invalid_request', "Give the extension to look for as ?q= (for example ?q=io)");
      try {
        return { success: true, ...(await (await search()).searchTlds(q)) };
      } catch (err) {
        return badQuery(err);
      }
    },
  );

  app.post<{ Body: { query: string } }>(
    '/api/v3/domains/search',
    {
      onRequest: requireScope('domains:read'),
      config: limited(limits.search),
      schema: {
        operationId: 'searchDomains',
        summary: "A name's availability and prices (or a bare label's under the popular TLDs)",
        tags: TAGS,
        body: SearchBody,
        response: { 200: DomainSearchResponse, ...RESPONSES },
      },
    },
    async (request) => {
      try {
        return { success: true, ...(await (await search()).search(request.body.query)) };
      } catch (err) {
        return badQuery(err);
      }
    },
  );
};
