// GET /api/v3/cdn/usage?limit= (scope usage:read): the latest usage events and ledger entries, newest
// first, and the credits state. limit defaults to 50 and is capped at 500 (SPEC.md §8).
// Beside it, for reading further back (the dashboard's usage page): GET .../usage/events and
// .../usage/ledger, pages of a window (`from`, `to` in ISO 8601; events also by `type`) by a cursor, and
// GET .../usage/daily?days=N, the last N UTC days' events, bytes and credits, zeros included.
import { Type } from '@sinclair/typebox';
import { ledgerEntryView, usageEventView } from '../../usage/views.js';
import { cursorText, type PageCursor } from '../../db/repos/page-cursor.js';
import type { UsageEventType } from '../../db/repos/usage.js';
import { fromMilli } from '../../credits/credits.js';
import { badRequest } from '../errors.js';
import { cursorParam, intParam, textParam, windowParams } from '../query.js';
import { principalOf, type RouteModule } from '../route-module.js';
import { Credits, ERROR_RESPONSES, LedgerEntry, UsageEvent } from './schemas.js';

export const USAGE_DEFAULT_LIMIT = 50;
export const USAGE_MAX_LIMIT = 500;
const DAILY_DEFAULT_DAYS = 30;
const DAILY_MAX_DAYS = 366;
const DAY_MS = 86_400_000;
const EVENT_TYPES: readonly UsageEventType[] = ['upload', 'download', 'delete'];

const EventsPage = Type.Object({ success: Type.Boolean(), data: Type.Object({ events: Type.Array(UsageEvent), nextCursor: Type.Union([Type.String(), Type.Null()]) }) });
const LedgerPage = Type.Object({ success: Type.Boolean(), data: Type.Object({ entries: Type.Array(LedgerEntry), nextCursor: Type.Union([Type.String(), Type.Null()]) }) });
const Daily = Type.Object({
  success: Type.Boolean(),
  data: Type.Object({
    days: Type.Array(Type.Object({
      date: Type.String(),
      uploads: Type.Integer(), uploadedBytes: Type.Integer(),
      downloads: Type.Integer(), downloadedBytes: Type.Integer(),
      deletes: Type.Integer(),
      creditsCharged: Type.Number(), creditsAdded: Type.Number(),
    })),
  }),
});

/** One more row than asked says whether a next page exists. */
function pageOf<T extends { position: PageCursor }>(rows: T[], limit: number): { rows: T[]; nextCursor: string | null } {
  const last = rows[limit - 1];
  return { rows: rows.slice(0, limit), nextCursor: rows.length > limit && last ? cursorText(last.position) : null };
}

const TAGS = ['usage'];
const limitParam = Type.Optional(Type.Integer({ minimum: 1, maximum: USAGE_MAX_LIMIT, default: USAGE_DEFAULT_LIMIT, description: `An invalid value means ${USAGE_DEFAULT_LIMIT}; above ${USAGE_MAX_LIMIT} means ${USAGE_MAX_LIMIT}` }));
const WindowQuery = {
  from: Type.Optional(Type.String({ format: 'date-time', description: 'ISO 8601; default the beginning' })),
  to: Type.Optional(Type.String({ format: 'date-time', description: 'ISO 8601; default now' })),
  limit: limitParam,
  cursor: Type.Optional(Type.String({ description: "The previous page's nextCursor" })),
};
const EventsQuery = Type.Object({ ...WindowQuery, type: Type.Optional(Type.Union(EVENT_TYPES.map((e) => Type.Literal(e)))) });
const LedgerQuery = Type.Object(WindowQuery);
const DailyQuery = Type.Object({ days: Type.Optional(Type.Integer({ minimum: 1, maximum: DAILY_MAX_DAYS, default: DAILY_DEFAULT_DAYS })) });

const Response = Type.Object({
  success: Type.Boolean(),
  events: Type.Array(UsageEvent),
  creditLedger: Type.Array(LedgerEntry),
  credits: Credits,
});

export const usageRoutes: RouteModule = (app, { ctx, requireScope }) => {
  app.get<{ Querystring: Record<string, unknown> }>(
    '/api/v3/cdn/usage',
    {
      onRequest: requireScope('usage:read'),
      schema: {
        operationId: 'getUsage',
        summary: 'The latest usage events and credit ledger entries, newest first, and the credits state',
        tags: TAGS,
        documentedQuery: Type.Object({ limit: limitParam }),
        response: { 200: Response, ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { userId } = principalOf(request);
      const limit = intParam(request.query.limit, USAGE_DEFAULT_LIMIT, 1, USAGE_MAX_LIMIT);
      const { repos } = ctx;
      // CDN downloads become usage events when the request log flushes: include the ones still buffered.
      await ctx.requestLog.flush();
      return {
        success: true,
        events: (await repos.usage.recent(userId, limit)).map(usageEventView),
        creditLedger: (await repos.credits.recent(userId, limit)).map(ledgerEntryView),
        credits: await ctx.credits.state(userId, await repos.storageUsage.ownerBytes(userId)),
      };
    },
  );

  app.get<{ Querystring: Record<string, unknown> }>(
    '/api/v3/cdn/usage/events',
    {
      onRequest: requireScope('usage:read'),
      schema: { operationId: 'listUsageEvents', summary: 'A page of usage events in a window, newest first', tags: TAGS, documentedQuery: EventsQuery, response: { 200: EventsPage, ...ERROR_RESPONSES } },
    },
    async (request) => {
      const q = request.query;
      const type = textParam(q, 'type');
      if (type !== undefined && !EVENT_TYPES.includes(type as UsageEventType)) throw badRequest(`type must be one of ${EVENT_TYPES.join(', ')}`);
      const limit = intParam(q.limit, USAGE_DEFAULT_LIMIT, 1, USAGE_MAX_LIMIT);
      const query = { ...windowParams(q, ctx.clock().getTime(), () => 0), after: cursorParam(q), limit: limit + 1, ...(type === undefined ? {} : { eventType: type as UsageEventType }) };
      await ctx.requestLog.flush();
      const page = pageOf(await ctx.repos.usage.page(principalOf(request).userId, query), limit);
      return { success: true, data: { events: page.rows.map((r) => usageEventView(r.event)), nextCursor: page.nextCursor } };
    },
  );

  app.get<{ Querystring: Record<string, unknown> }>(
    '/api/v3/cdn/usage/ledger',
    {
      onRequest: requireScope('usage:read'),
      schema: { operationId: 'listLedgerEntries', summary: 'A page of credit ledger entries in a window, newest first', tags: TAGS, documentedQuery: LedgerQuery, response: { 200: LedgerPage, ...ERROR_RESPONSES } },
    },
    async (request) => {
      const q = request.query;
      const limit = intParam(q.limit, USAGE_DEFAULT_LIMIT, 1, USAGE_MAX_LIMIT);
      const query = { ...windowParams(q, ctx.clock().getTime(), () => 0), after: cursorParam(q), limit: limit + 1 };
      const page = pageOf(await ctx.repos.credits.page(principalOf(request).userId, query), limit);
      return { success: true, data: { entries: page.rows.map((r) => ledgerEntryView(r.entry)), nextCursor: page.nextCursor } };
    },
  );

  app.get<{ Querystring: Record<string, unknown> }>(
    '/api/v3/cdn/usage/daily',
    {
      onRequest: requireScope('usage:read'),
      schema: { operationId: 'getDailyUsage', summary: 'The last N UTC days: events, bytes and credits, oldest first, zeros included', tags: TAGS, documentedQuery: DailyQuery, response: { 200: Daily, ...ERROR_RESPONSES } },
    },
    async (request) => {
      const { userId } = principalOf(request);
      const days = intParam(request.query.days, DAILY_DEFAULT_DAYS, 1, DAILY_MAX_DAYS);
      const nowMs = ctx.clock().getTime();
      const firstDay = Math.floor(nowMs / DAY_MS) * DAY_MS - (days - 1) * DAY_MS;
      await ctx.requestLog.flush();
      const [events, ledger] = await Promise.all([ctx.repos.usage.daily(userId, firstDay, nowMs), ctx.repos.credits.daily(userId, firstDay, nowMs)]);
      const out = Array.from({ length: days }, (_, i) => ({
        date: new Date(firstDay + i * DAY_MS).toISOString().slice(0, 10),
        uploads: 0, uploadedBytes: 0, downloads: 0, downloadedBytes: 0, deletes: 0, creditsCharged: 0, creditsAdded: 0,
      }));
      for (const r of events) {
        const day = out[Math.round((Number(r.day) - firstDay) / DAY_MS)];
        if (!day) continue;
        if (r.eventType === 'upload') Object.assign(day, { uploads: Number(r.events), uploadedBytes: Number(r.bytes) });
        else if (r.eventType === 'download') Object.assign(day, { downloads: Number(r.events), downloadedBytes: Number(r.bytes) });
        else day.deletes = Number(r.events);
      }
      for (const r of ledger) {
        const day = out[Math.round((Number(r.day) - firstDay) / DAY_MS)];
        if (day) Object.assign(day, { creditsCharged: fromMilli(Number(r.chargedMilli)), creditsAdded: fromMilli(Number(r.addedMilli)) });
      }
      return { success: true, data: { days: out } };
    },
  );
};
