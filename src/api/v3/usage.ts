// GET /api/v3/cdn/usage?limit= (scope usage:read): the latest usage events and ledger entries, newest
// first, and the credits state. limit defaults to 50 and is capped at 500 (SPEC.md §8).
import { Type } from '@sinclair/typebox';
import { ledgerEntryView, usageEventView } from '../../usage/views.js';
import { intParam } from '../query.js';
import { principalOf, type RouteModule } from '../route-module.js';
import { Credits, ERROR_RESPONSES, LedgerEntry, UsageEvent } from './schemas.js';

export const USAGE_DEFAULT_LIMIT = 50;
export const USAGE_MAX_LIMIT = 500;

const Response = Type.Object({
  success: Type.Boolean(),
  events: Type.Array(UsageEvent),
  creditLedger: Type.Array(LedgerEntry),
  credits: Credits,
});

export const usageRoutes: RouteModule = (app, { ctx, requireScope }) => {
  app.get<{ Querystring: Record<string, unknown> }>(
    '/api/v3/cdn/usage',
    { onRequest: requireScope('usage:read'), schema: { response: { 200: Response, ...ERROR_RESPONSES } } },
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
        credits: await ctx.credits.state(userId, (await repos.assets.stats(userId)).storageBytes),
      };
    },
  );
};
