// GET /api/v3/cdn/summary (scope assets:read): the authenticated user's storage, traffic, space and credits.
import { Type } from '@sinclair/typebox';
import { logAnalytics, windowStart } from '../../analytics/log-analytics.js';
import { usageFallbackAnalytics, WINDOW_MS } from '../../analytics/usage-fallback.js';
import { assetView } from '../../assets/view.js';
import type { AppContext } from '../../context.js';
import type { Space } from '../../db/repos/spaces.js';
import { ownedProject } from './owned.js';
import { principalOf, type RouteModule } from '../route-module.js';
import { ERROR_RESPONSES, Summary, type Analytics, type Space as SpaceView, type Summary as SummaryData } from './schemas.js';

const RECENT_ASSETS = 8;

export function spaceView(s: Space): SpaceView {
  return { id: s.id, name: s.name, status: s.status, suspendedAt: s.suspendedAt === null ? null : new Date(s.suspendedAt).toISOString() };
}

/**
 * The last 24 hours of CDN traffic: from the request log when it holds requests of the user in the
 * window (flush the buffer first, so every request that has ended is counted), else from the
 * download usage events (`available: false`).
 */
async function userAnalytics(ctx: AppContext, userId: string, now: number): Promise<Analytics> {
  const hostname = ctx.config.cdn.hostname;
  const fromLog = logAnalytics(await ctx.requestLog.traffic.ownerHours(userId, windowStart(now), now), now, hostname);
  return fromLog ?? usageFallbackAnalytics(await ctx.repos.usage.since(userId, 'download', now - WINDOW_MS + 1), now, hostname);
}

/** `projectId` (the caller's project) narrows the asset counts and recent assets to it; the rest is the account's. */
export async function buildSummary(ctx: AppContext, userId: string, projectId?: string): Promise<SummaryData> {
  const now = ctx.clock().getTime();
  const { repos, config } = ctx;
  // Buffered CDN requests (and the download usage events among them) count too.
  await ctx.requestLog.flush();
  const stats = await repos.assets.stats(userId);
  const shown = projectId === undefined ? stats : await repos.assets.stats(userId, projectId);
  const totals = await repos.usage.totals(userId);
  const view = { cdnBase: ctx.endpoints.cdn, storageName: config.storageName };
  return {
    totalFiles: shown.totalFiles,
    storageBytes: shown.storageBytes,
    uploadedBytes: totals.uploadedBytes,
    downloadedBytes: totals.downloadedBytes,
    uploadsLast24h: await repos.assets.countCreatedSince(userId, now - WINDOW_MS + 1, projectId),
    recentAssets: (await repos.assets.page({ userId, limit: RECENT_ASSETS, offset: 0, ...(projectId === undefined ? {} : { projectId }) })).assets.map(
      (a) => assetView(a, view),
    ),
    analytics: await userAnalytics(ctx, userId, now),
    // Object storage is part of the gateway (local disk or an upstream store): always configured.
    configured: true,
    storageName: config.storageName,
    space: spaceView(await ctx.repos.spaces.ensure(userId)),
    credits: await ctx.credits.state(userId, await repos.storageUsage.ownerBytes(userId)),
  };
}

export const summaryRoutes: RouteModule = (app, { ctx, requireScope }) => {
  app.get(
    '/api/v3/cdn/summary',
    {
      onRequest: requireScope('assets:read'),
      schema: {
        operationId: 'getSummary',
        summary: "The caller's storage, last 24 hours of traffic, space and credits",
        tags: ['assets'],
        documentedQuery: Type.Object({ projectId: Type.Optional(Type.String({ description: "Counts and recent assets of this project only (404 when not the caller's)" })) }),
        response: { 200: Type.Object({ success: Type.Boolean(), data: Summary }), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { userId } = principalOf(request);
      const raw = (request.query as Record<string, string | undefined>)['projectId'];
      // An unknown project, or another user's, is 404 (as on the asset list).
      return { success: true, data: await buildSummary(ctx, userId, raw ? (await ownedProject(ctx, userId, raw)).id : undefined) };
    },
  );
};
