// Routes of /api/v3 (usage): filled in by the issue-5 work.
import type { RouteModule } from '../plugin.js';

export const usageRoutes: RouteModule = () => {};
