// GET /api/v3/storage/quota (scope usage:read): what the caller stores against their storage quota, as an
// account (buckets and assets together) and per bucket, with each quota (null: none). The operator sets
// them (`s3edge users set-quota`, `s3edge buckets set-quota`); uploads past one are refused with
// quota_exceeded (403; S3's QuotaExceeded), docs/API.md "Storage quotas".
import { Type } from '@sinclair/typebox';
import { principalOf, type RouteModule } from '../route-module.js';
import { ERROR_RESPONSES, StorageQuota } from './schemas.js';

const Response = Type.Object({ success: Type.Boolean(), data: StorageQuota });

export const quotaRoutes: RouteModule = (app, { ctx, requireScope }) => {
  app.get(
    '/api/v3/storage/quota',
    {
      onRequest: requireScope('usage:read'),
      schema: {
        operationId: 'getStorageQuota',
        summary: "What the caller stores and may store: the account's storage quota and each bucket's",
        description: 'Stored bytes are exact (counted in the transaction of every change). An upload that would pass a quota is refused with 403 quota_exceeded.',
        tags: ['usage'],
        response: { 200: Response, ...ERROR_RESPONSES },
      },
    },
    async (request) => ({ success: true, data: await ctx.quotas.report(principalOf(request).userId) }),
  );
};
