// Routes of /api/v3 (storage-keys): filled in by the issue-5 work.
import type { RouteModule } from '../plugin.js';

export const storageKeyRoutes: RouteModule = () => {};
