// The management API's one ProjectsService per context, shared by the project and hostname routes
// (projects.ts) and the hostname-TLS routes (hostname-tls.ts), so both see a change the same way: the
// edge's route table reloaded, the hostname's cached answers purged.
import type { ApiDeps } from '../route-module.js';
import { ProjectsService } from '../../projects/service.js';
import { dnsTxtLookup } from '../../projects/verification.js';

type AppContext = ApiDeps['ctx'];

const services = new WeakMap<AppContext, ProjectsService>();

export function projectsServiceOf(ctx: AppContext): ProjectsService {
  let service = services.get(ctx);
  if (service === undefined) {
    service = new ProjectsService({
      repos: ctx.repos,
      config: ctx.config,
      lookupTxt: dnsTxtLookup(ctx.config.edge),
      changed: () => ctx.edgeRoutes.invalidate(),
      purgeCache: (hostnameId) => ctx.cachePurges.purge({ kind: 'hostname', hostnameId }),
    });
    services.set(ctx, service);
  }
  return service;
}
