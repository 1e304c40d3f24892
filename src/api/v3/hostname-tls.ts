// /api/v3/projects/:projectId/hostnames/:hostname/tls: a project hostname's HTTPS (issue 38) as its owner
// sees and changes it: the status of its certificate, its settings (redirect, HSTS, minimum TLS version),
// "issue now", an uploaded certificate and its removal. Thin: the work and the checks are
// src/certificates/tls-service.ts's. `:hostname` is the hostname's id or its name. Scopes projects:read
// (GET) and projects:write (the rest); another user's project or hostname is "not found", exactly like a
// missing one. No answer ever carries a private key.
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyRequest, FastifySchema } from 'fastify';
import type { ProjectHostname } from '../../db/repos/index.js';
import { TlsService, type TlsStatus as ServiceTlsStatus } from '../../certificates/tls-service.js';
import { answered } from './project-answers.js';
import { principalOf, type RouteModule } from '../route-module.js';
import { CertificateUpload, ERROR_RESPONSES, TlsSettingsInput, TlsStatus } from './schemas.js';

const Params = Type.Object({
  projectId: Type.String({ minLength: 1, maxLength: 64 }),
  hostname: Type.String({ minLength: 1, maxLength: 253, description: "The hostname's id, or its name (www.example.com)" }),
});
type Params = Static<typeof Params>;

const TAGS = ['projects'];
const TlsResponse = Type.Object({ success: Type.Boolean(), tls: TlsStatus });

/** A PEM chain and key are a few kB; the service refuses either over 64 KiB, the body limit anything far larger. */
const UPLOAD_BODY_LIMIT = 128 * 1024;

/** The service's status as the answer; its refusals as API errors (project-answers.ts). */
function tlsAnswer(fn: () => Promise<ServiceTlsStatus>): Promise<{ success: true; tls: TlsStatus }> {
  return answered(async () => {
    // Typed as the response schema: the service's view and the documented one cannot drift apart.
    const tls: TlsStatus = await fn();
    return { success: true as const, tls };
  });
}

function schema(operationId: string, summary: string, more: FastifySchema = {}, status = 200): FastifySchema {
  return { operationId, summary, tags: TAGS, params: Params, response: { [status]: TlsResponse, ...ERROR_RESPONSES }, ...more };
}

export const hostnameTlsRoutes: RouteModule = (app, { ctx, projects, requireScope }) => {
  const read = requireScope('projects:read');
  const write = requireScope('projects:write');
  const tls = new TlsService({
    repos: ctx.repos,
    acme: ctx.config.acme,
    masterKey: ctx.masterKey,
    now: () => ctx.clock().getTime(),
    changed: () => ctx.edgeRoutes.invalidate(),
  });

  /** The caller's hostname named by `:hostname` (id or name) in the caller's project `:projectId`. */
  const callersHostname = async (request: FastifyRequest<{ Params: Params }>): Promise<ProjectHostname> => {
    const project = await projects.ownedProject(principalOf(request).userId, request.params.projectId);
    return projects.hostnameOfByIdOrName(project, request.params.hostname);
  };

  const base = '/api/v3/projects/:projectId/hostnames/:hostname/tls';

  app.get<{ Params: Params }>(
    base,
    {
      onRequest: read,
      schema: schema('getHostnameTls', "A hostname's HTTPS: the certificate's state in a word and a sentence, the certificate, the last failure, the settings"),
    },
    async (request) => tlsAnswer(async () => tls.status(await callersHostname(request))),
  );

  // The settings are checked by the service, which names the field that is wrong.
  app.patch<{ Params: Params }>(
    base,
    {
      onRequest: write,
      schema: schema('updateHostnameTls', "Change a hostname's HTTPS settings (redirect to HTTPS, HSTS, minimum TLS version); those not given stay", {
        documentedBody: { schema: TlsSettingsInput },
      }),
    },
    async (request) => tlsAnswer(async () => tls.updateSettings(await callersHostname(request), request.body)),
  );

  app.post<{ Params: Params }>(
    `${base}/issue`,
    {
      onRequest: write,
      schema: schema(
        'issueHostnameCertificate',
        'Ask for a certificate now: the ACME job issues it on its next round (within acme.checkIntervalSeconds)',
        { description: 'Refused with 400 when the hostname is not verified, when this server has no ACME directory (acme.directory), or while an uploaded certificate is served.' },
        202,
      ),
    },
    async (request, reply) => {
      const answer = await tlsAnswer(async () => tls.requestIssue(await callersHostname(request)));
      void reply.code(202);
      return answer;
    },
  );

  app.put<{ Params: Params; Body: CertificateUpload }>(
    `${base}/certificate`,
    {
      onRequest: write,
      bodyLimit: UPLOAD_BODY_LIMIT,
      schema: schema('uploadHostnameCertificate', 'Serve an uploaded certificate: it must name the hostname, be valid now and match the key; ACME leaves it alone', {
        body: CertificateUpload,
        description: 'A 400 says what to fix: another name, expired or not yet valid, a key that does not belong to it, not PEM, a chain out of order. The key is stored sealed and never shown.',
      }),
    },
    async (request) => tlsAnswer(async () => tls.upload(await callersHostname(request), request.body)),
  );

  app.delete<{ Params: Params }>(
    `${base}/certificate`,
    {
      onRequest: write,
      schema: schema('removeHostnameCertificate', "Drop the hostname's certificate and its key; with ACME on, a new one is requested at once"),
    },
    async (request) => tlsAnswer(async () => tls.remove(await callersHostname(request))),
  );
};
