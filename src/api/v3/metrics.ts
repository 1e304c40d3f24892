// Routes of /api/v3 (metrics): issue 6, to be filled in.
import type { RouteModule } from '../plugin.js';

export const metricsRoutes: RouteModule = () => {};
