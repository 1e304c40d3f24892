// Routes of /api/v3 (purge): issue 6, to be filled in.
import type { RouteModule } from '../plugin.js';

export const purgeRoutes: RouteModule = () => {};
