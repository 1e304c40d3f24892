// Routes of /api/v3 (proxy-logs): filled in by the issue-5 work.
import type { RouteModule } from '../plugin.js';

export const proxyLogRoutes: RouteModule = () => {};
