// Routes of /api/v3 (assets): filled in by the issue-5 work.
import type { RouteModule } from '../plugin.js';

export const assetRoutes: RouteModule = () => {};
