// /api/v3/projects: a user's projects, their deployments and the hostnames the edge proxy serves for them
// (origin, rules, DNS verification, cache purge). Thin: the work is src/projects/service.ts's. Scopes
// projects:read (GET) and projects:write (the rest). Another user's project, deployment or hostname is
// "not found", exactly like a missing one; a hostname any project has is 409 hostname_taken.
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyRequest, FastifySchema } from 'fastify';
import type { Deployment as DeploymentRecord, Project as ProjectRecord, ProjectHostname } from '../../db/repos/index.js';
import { answered } from './project-answers.js';
import { principalOf, type RouteModule } from '../route-module.js';
import { Deployment, ERROR_RESPONSES, ErrorBody, Hostname, OriginInput, Project, RulesInput, SuccessMessage } from './schemas.js';

const ProjectParams = Type.Object({ projectId: Type.String({ minLength: 1, maxLength: 64 }) });
const HostnameParams = Type.Object({ projectId: Type.String({ minLength: 1, maxLength: 64 }), hostnameId: Type.String({ minLength: 1, maxLength: 64 }) });
type ProjectParams = Static<typeof ProjectParams>;
type HostnameParams = Static<typeof HostnameParams>;

const NameBody = Type.Object({ name: Type.String() }, { additionalProperties: false, examples: [{ name: 'website' }] });
const HostnameBody = Type.Object(
  { hostname: Type.String(), origin: Type.Optional(Type.Unknown()), rules: Type.Optional(Type.Unknown()) },
  { additionalProperties: false },
);
/** HostnameBody as the service checks it (origin and rules are checked there, to name the field that is wrong). */
const DocumentedHostnameBody = Type.Object(
  { hostname: Type.String(), origin: Type.Optional(OriginInput), rules: Type.Optional(RulesInput) },
  { additionalProperties: false, examples: [{ hostname: 'www.example.com', origin: { kind: 'bucket', bucket: 'photos' } }] },
);
const TAGS = ['projects'];

const RESPONSES = { ...ERROR_RESPONSES, 409: ErrorBody } as const;
const ProjectResponse = Type.Object({ success: Type.Boolean(), project: Project });
const DeploymentResponse = Type.Object({ success: Type.Boolean(), deployment: Deployment });
const HostnameResponse = Type.Object({ success: Type.Boolean(), hostname: Hostname });

/** The schema of a route of one hostname that answers with it. */
function hostnameSchema(operationId: string, summary: string, more: FastifySchema = {}): FastifySchema {
  return { operationId, summary, tags: TAGS, params: HostnameParams, response: { 200: HostnameResponse, ...RESPONSES }, ...more };
}

/** DNS lookups a key may cause: verification attempts per API key and minute (429 past it). */
const VERIFY_LIMIT = { max: 30, timeWindow: 60_000 };

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function projectView(p: ProjectRecord): Project {
  return { id: p.id, name: p.name, createdAt: iso(p.createdAt) };
}

function deploymentView(d: DeploymentRecord): Deployment {
  return { id: d.id, projectId: d.projectId, name: d.name, createdAt: iso(d.createdAt) };
}

export const projectRoutes: RouteModule = (app, { projects, requireScope }) => {
  const read = requireScope('projects:read');
  const write = requireScope('projects:write');

  const hostnameView = async (h: ProjectHostname): Promise<Hostname> => ({
    id: h.id,
    hostname: h.hostname,
    projectId: h.projectId,
    origin: await projects.originView(h.origin),
    rules: h.rules,
    verified: h.verifiedAt !== null,
    verifiedAt: h.verifiedAt === null ? null : iso(h.verifiedAt),
    verifiedBy: h.verifiedBy,
    verification: projects.verificationRecord(h),
    createdAt: iso(h.createdAt),
    updatedAt: iso(h.updatedAt),
  });

  const callersProject = (request: FastifyRequest<{ Params: ProjectParams }>): Promise<ProjectRecord> =>
    projects.ownedProject(principalOf(request).userId, request.params.projectId);

  const callersHostname = async (request: FastifyRequest<{ Params: HostnameParams }>): Promise<{ project: ProjectRecord; hostname: ProjectHostname }> => {
    const project = await projects.ownedProject(principalOf(request).userId, request.params.projectId);
    return { project, hostname: await projects.hostnameOf(project, request.params.hostnameId) };
  };

  // --- projects ------------------------------------------------------------------------------------

  app.get(
    '/api/v3/projects',
    {
      onRequest: read,
      schema: { operationId: 'listProjects', summary: "The caller's projects", tags: TAGS, response: { 200: Type.Object({ success: Type.Boolean(), projects: Type.Array(Project) }), ...RESPONSES } },
    },
    async (request) => ({ success: true, projects: (await projects.projectsOf(principalOf(request).userId)).map(projectView) }),
  );

  app.post<{ Body: Static<typeof NameBody> }>(
    '/api/v3/projects',
    { onRequest: write, schema: { operationId: 'createProject', summary: 'Create a project', tags: TAGS, body: NameBody, response: { 201: ProjectResponse, ...RESPONSES } } },
    async (request, reply) =>
      answered(async () => {
        const project = await projects.createProject(principalOf(request).userId, request.body.name, 'body/name');
        void reply.code(201);
        return { success: true, project: projectView(project) };
      }),
  );

  app.get<{ Params: ProjectParams }>(
    '/api/v3/projects/:projectId',
    { onRequest: read, schema: { operationId: 'getProject', summary: 'One project', tags: TAGS, params: ProjectParams, response: { 200: ProjectResponse, ...RESPONSES } } },
    async (request) => answered(async () => ({ success: true, project: projectView(await callersProject(request)) })),
  );

  app.delete<{ Params: ProjectParams }>(
    '/api/v3/projects/:projectId',
    {
      onRequest: write,
      schema: {
        operationId: 'deleteProject',
        summary: 'Delete a project with its deployments and hostnames (its assets stay, unlinked)',
        tags: TAGS,
        params: ProjectParams,
        response: { 200: SuccessMessage, ...RESPONSES },
      },
    },
    async (request) =>
      answered(async () => {
        await projects.deleteProject(await callersProject(request));
        return { success: true, message: 'Project deleted' };
      }),
  );

  // --- deployments ---------------------------------------------------------------------------------

  app.get<{ Params: ProjectParams }>(
    '/api/v3/projects/:projectId/deployments',
    {
      onRequest: read,
      schema: {
        operationId: 'listDeployments',
        summary: "A project's deployments",
        tags: TAGS,
        params: ProjectParams,
        response: { 200: Type.Object({ success: Type.Boolean(), deployments: Type.Array(Deployment) }), ...RESPONSES },
      },
    },
    async (request) => answered(async () => ({ success: true, deployments: (await projects.deployments(await callersProject(request))).map(deploymentView) })),
  );

  app.post<{ Params: ProjectParams; Body: Static<typeof NameBody> }>(
    '/api/v3/projects/:projectId/deployments',
    {
      onRequest: write,
      schema: { operationId: 'createDeployment', summary: 'Create a deployment of a project', tags: TAGS, params: ProjectParams, body: NameBody, response: { 201: DeploymentResponse, ...RESPONSES } },
    },
    async (request, reply) =>
      answered(async () => {
        const deployment = await projects.createDeployment(await callersProject(request), request.body.name, 'body/name');
        void reply.code(201);
        return { success: true, deployment: deploymentView(deployment) };
      }),
  );

  // --- hostnames -----------------------------------------------------------------------------------

  app.get<{ Params: ProjectParams }>(
    '/api/v3/projects/:projectId/hostnames',
    {
      onRequest: read,
      schema: {
        operationId: 'listHostnames',
        summary: "A project's hostnames",
        tags: TAGS,
        params: ProjectParams,
        response: { 200: Type.Object({ success: Type.Boolean(), hostnames: Type.Array(Hostname) }), ...RESPONSES },
      },
    },
    async (request) =>
      answered(async () => ({ success: true, hostnames: await Promise.all((await projects.hostnames(await callersProject(request))).map(hostnameView)) })),
  );

  app.post<{ Params: ProjectParams; Body: Static<typeof HostnameBody> }>(
    '/api/v3/projects/:projectId/hostnames',
    {
      onRequest: write,
      schema: {
        operationId: 'addHostname',
        summary: 'Add a hostname to a project (unverified: publish `verification`, then verify)',
        tags: TAGS,
        params: ProjectParams,
        body: HostnameBody,
        documentedBody: { schema: DocumentedHostnameBody },
        response: { 201: HostnameResponse, ...RESPONSES },
      },
    },
    async (request, reply) =>
      answered(async () => {
        const added = await projects.addHostname(await callersProject(request), request.body, 'body');
        void reply.code(201);
        return { success: true, hostname: await hostnameView(added) };
      }),
  );

  app.get<{ Params: HostnameParams }>(
    '/api/v3/projects/:projectId/hostnames/:hostnameId',
    { onRequest: read, schema: hostnameSchema('getHostname', 'One hostname of a project') },
    async (request) => answered(async () => ({ success: true, hostname: await hostnameView((await callersHostname(request)).hostname) })),
  );

  app.delete<{ Params: HostnameParams }>(
    '/api/v3/projects/:projectId/hostnames/:hostnameId',
    { onRequest: write, schema: { operationId: 'removeHostname', summary: 'Remove a hostname', tags: TAGS, params: HostnameParams, response: { 200: SuccessMessage, ...RESPONSES } } },
    async (request) =>
      answered(async () => {
        await projects.removeHostname((await callersHostname(request)).hostname);
        return { success: true, message: 'Hostname removed' };
      }),
  );

  // The origin and the rules are checked by the service, which names the field that is wrong.
  app.put<{ Params: HostnameParams }>(
    '/api/v3/projects/:projectId/hostnames/:hostnameId/origin',
    {
      onRequest: write,
      schema: hostnameSchema('setHostnameOrigin', "Set where a hostname's requests go: a URL, or one of the caller's buckets", { documentedBody: { schema: OriginInput } }),
    },
    async (request) =>
      answered(async () => {
        const { project, hostname } = await callersHostname(request);
        return { success: true, hostname: await hostnameView(await projects.setOrigin(project, hostname, request.body, 'body')) };
      }),
  );

  app.put<{ Params: HostnameParams }>(
    '/api/v3/projects/:projectId/hostnames/:hostnameId/rules',
    {
      onRequest: write,
      schema: hostnameSchema('setHostnameRules', "Set a hostname's protection rules (IPs, countries, methods, body size, rate limit)", { documentedBody: { schema: RulesInput } }),
    },
    async (request) =>
      answered(async () => ({ success: true, hostname: await hostnameView(await projects.setRules((await callersHostname(request)).hostname, request.body)) })),
  );

  app.post<{ Params: HostnameParams }>(
    '/api/v3/projects/:projectId/hostnames/:hostnameId/verify',
    {
      onRequest: write,
      config: { rateLimit: VERIFY_LIMIT },
      schema: hostnameSchema('verifyHostname', "Look the hostname's TXT record up; 409 verification_failed says what DNS had instead", {
        response: { 200: HostnameResponse, ...RESPONSES, 429: ErrorBody },
      }),
    },
    async (request) =>
      answered(async () => ({ success: true, hostname: await hostnameView(await projects.verify((await callersHostname(request)).hostname)) })),
  );

  app.post<{ Params: HostnameParams }>(
    '/api/v3/projects/:projectId/hostnames/:hostnameId/purge',
    {
      onRequest: write,
      schema: {
        operationId: 'purgeHostname',
        summary: "Drop the hostname's cached proxy answers; returns how many",
        tags: TAGS,
        params: HostnameParams,
        response: { 200: Type.Object({ success: Type.Boolean(), purged: Type.Integer() }), ...RESPONSES },
      },
    },
    async (request) => answered(async () => ({ success: true, purged: projects.purge((await callersHostname(request)).hostname) })),
  );
};
