// Routes of /api/v3 (buckets): issue 6, to be filled in.
import type { RouteModule } from '../plugin.js';

export const bucketRoutes: RouteModule = () => {};
