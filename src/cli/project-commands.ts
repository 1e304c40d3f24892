// Admin commands of the edge proxy's projects and hostnames (docs/API.md "Projects and hostnames"): the
// operator's view of every user's projects, adding and removing hostnames, their origins and rules, and
// verification, by DNS or by the operator's say-so. The checks are the API's (src/projects/service.ts).
// A running server sees a change within 250 ms (src/edge/route.ts reads SQLite's data_version). And a
// hostname's HTTPS (`hostnames tls`): its certificate's state, its settings, an uploaded certificate, and
// an ACME issuance run in this process, now (src/certificates/).
import { readFileSync, statSync } from 'node:fs';
import { MAX_PEM_BYTES } from '../certificates/certificate-pem.js';
import { CertificateIssuance } from '../certificates/issuance.js';
import { MAX_HSTS_SECONDS, TlsService, type TlsStatus } from '../certificates/tls-service.js';
import type { Project, ProjectHostname, Repos, User } from '../db/repos/index.js';
import { ProjectError } from '../projects/errors.js';
import { ProjectsService } from '../projects/service.js';
import { dnsTxtLookup } from '../projects/verification.js';
import { AdminError, FailedResult, iso, Presented, type Command, type RunContext } from './command.js';

/** The flags these commands take, with the placeholder their synopsis shows (none for a switch). */
export const PROJECT_FLAGS: Readonly<Record<string, { type: 'string' | 'boolean'; value?: string }>> = {
  project: { type: 'string', value: 'PROJECT' },
  url: { type: 'string', value: 'URL' },
  'preserve-host': { type: 'boolean' },
  index: { type: 'string', value: 'KEY' },
  'error-document': { type: 'string', value: 'KEY' },
  rules: { type: 'string', value: 'JSON' },
  'rules-file': { type: 'string', value: 'FILE' },
  operator: { type: 'boolean' },
  // hostnames tls
  redirect: { type: 'string', value: 'on|off' },
  hsts: { type: 'string', value: 'SECONDS' },
  'hsts-subdomains': { type: 'string', value: 'on|off' },
  'min-tls': { type: 'string', value: '1.2|1.3' },
  upload: { type: 'boolean' },
  cert: { type: 'string', value: 'FILE' },
  key: { type: 'string', value: 'FILE' },
  remove: { type: 'boolean' },
  issue: { type: 'boolean' },
};

export const PROJECT_GROUPS: Readonly<Record<string, { section: string; summary: string }>> = {
  projects: { section: 'Edge proxy', summary: "users' projects: the hostnames, deployments and assets they group" },
  hostnames: { section: 'Edge proxy', summary: 'project hostnames the edge proxy serves: origins, rules, verification, HTTPS' },
};

/** Longest rules JSON read from --rules or --rules-file. */
const MAX_RULES_BYTES = 64 * 1024;

const ERROR_CODES: Readonly<Record<string, string>> = {
  invalid_request: 'InvalidArgument',
  hostname_taken: 'HostnameTaken',
  project_exists: 'ProjectExists',
  verification_failed: 'VerificationFailed',
  not_found: 'NotFound',
};

function service({ repos, config }: Pick<RunContext, 'repos' | 'config'>): ProjectsService {
  return new ProjectsService({ repos, config, lookupTxt: dnsTxtLookup(config.edge) });
}

/** The service's refusals as failed commands. */
async function refusals<T>(fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ProjectError) throw new AdminError(ERROR_CODES[err.code] ?? 'InvalidArgument', err.message);
    throw err;
  }
}

async function userNamed(repos: Repos, name: string | undefined): Promise<User> {
  const user = await repos.users.getByName(name ?? '');
  if (!user) throw new AdminError('NoSuchUser', `no user named '${name ?? ''}'`);
  return user;
}

async function projectNamed(projects: ProjectsService, user: User, idOrName: string): Promise<Project> {
  try {
    return await projects.projectOf(user.id, idOrName);
  } catch (err) {
    if (err instanceof ProjectError) throw new AdminError('NoSuchProject', `user '${user.name}' has no project '${idOrName}'`);
    throw err;
  }
}

async function hostnameNamed(projects: ProjectsService, name: string): Promise<{ hostname: ProjectHostname; project: Project }> {
  try {
    return await projects.hostnameByName(name);
  } catch (err) {
    if (err instanceof ProjectError) throw new AdminError('NoSuchHostname', err.message);
    throw err;
  }
}

async function userName(repos: Repos, id: string): Promise<string> {
  return (await repos.users.getById(id))?.name ?? id;
}

/** One line of text: `https://origin.example.com (preserve host)`, `bucket site (index index.html)`. */
async function originText(projects: ProjectsService, h: ProjectHostname): Promise<string> {
  const origin = await projects.originView(h.origin);
  if (origin === null) return '';
  if (origin.kind === 'url') return origin.preserveHost ? `${origin.url} (preserve host)` : origin.url;
  const error = origin.errorDocument === null ? '' : `, error ${origin.errorDocument}`;
  return `bucket ${origin.bucket ?? '(deleted)'} (index ${origin.indexDocument}${error})`;
}

/** The rules that are set, as compact JSON; '' for none. */
function rulesText(h: ProjectHostname): string {
  const set = Object.entries(h.rules).filter(([, v]) => v !== null && !(Array.isArray(v) && v.length === 0));
  return set.length === 0 ? '' : JSON.stringify(Object.fromEntries(set));
}

async function hostnameRow(projects: ProjectsService, repos: Repos, h: ProjectHostname, project: Project): Promise<Record<string, unknown>> {
  const record = projects.verificationRecord(h);
  return {
    hostname: h.hostname,
    id: h.id,
    user: await userName(repos, project.userId),
    project: project.name,
    verified: h.verifiedAt !== null,
    verifiedBy: h.verifiedBy ?? '',
    origin: await originText(projects, h),
    rules: rulesText(h),
    verificationName: record.name,
    verificationValue: record.value,
  };
}

async function projectRow(repos: Repos, p: Project): Promise<Record<string, unknown>> {
  return {
    id: p.id,
    name: p.name,
    user: await userName(repos, p.userId),
    hostnames: (await repos.projects.hostnamesOfProject(p.id)).length,
    deployments: (await repos.projects.deployments(p.id)).length,
    createdAt: iso(p.createdAt),
  };
}

/** --url [--preserve-host], or --bucket [--index] [--error-document]: the origin as the API takes it. */
function originFlags(flags: RunContext['flags']): Record<string, unknown> {
  const { url, bucket } = flags;
  if ((url === undefined) === (bucket === undefined)) throw new AdminError('InvalidArgument', 'give --url URL or --bucket NAME (one of them)');
  if (url !== undefined) {
    if (flags.index !== undefined || flags['error-document'] !== undefined) {
      throw new AdminError('InvalidArgument', '--index and --error-document go with --bucket, not --url');
    }
    return { kind: 'url', url, preserveHost: flags['preserve-host'] !== undefined };
  }
  if (flags['preserve-host'] !== undefined) throw new AdminError('InvalidArgument', '--preserve-host goes with --url, not --bucket');
  return {
    kind: 'bucket',
    bucket,
    ...(flags.index === undefined ? {} : { indexDocument: flags.index }),
    ...(flags['error-document'] === undefined ? {} : { errorDocument: flags['error-document'] }),
  };
}

/** --rules JSON or --rules-file FILE, parsed (the service checks what it says). */
function rulesFlags(flags: RunContext['flags']): unknown {
  const inline = flags.rules;
  const file = flags['rules-file'];
  if ((inline === undefined) === (file === undefined)) throw new AdminError('InvalidArgument', "give --rules '{...}' or --rules-file FILE (one of them)");
  let text: string;
  if (inline !== undefined) {
    text = inline;
  } else {
    try {
      text = readFileSync(file as string, 'utf8');
    } catch (err) {
      throw new AdminError('InvalidRules', `cannot read --rules-file ${file as string}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  if (Buffer.byteLength(text, 'utf8') > MAX_RULES_BYTES) throw new AdminError('InvalidRules', `the rules are longer than ${MAX_RULES_BYTES} bytes`);
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new AdminError('InvalidRules', `the rules are not JSON: ${(err as Error).message}`);
  }
}

async function listProjects({ repos, flags }: RunContext): Promise<Record<string, unknown>[]> {
  const users = flags.user === undefined ? await repos.users.list() : [await userNamed(repos, flags.user)];
  const rows: Record<string, unknown>[] = [];
  for (const u of users) for (const p of await repos.projects.projectsOfUser(u.id)) rows.push(await projectRow(repos, p));
  return rows;
}

async function listHostnames(ctx: RunContext): Promise<Record<string, unknown>[]> {
  const { repos, flags } = ctx;
  const projects = service(ctx);
  if (flags.project !== undefined && flags.user === undefined) throw new AdminError('InvalidArgument', '--project needs --user (project names are per user)');
  const user = flags.user === undefined ? undefined : await userNamed(repos, flags.user);
  const project = user && flags.project !== undefined ? await projectNamed(projects, user, flags.project) : undefined;
  const hostnames = project ? await projects.hostnames(project) : user ? await projects.hostnamesOfUser(user.id) : await projects.allHostnames();
  const byId = new Map<string, Project | undefined>();
  const rows: Record<string, unknown>[] = [];
  for (const h of hostnames) {
    if (!byId.has(h.projectId)) byId.set(h.projectId, await repos.projects.project(h.projectId));
    const p = byId.get(h.projectId);
    if (p) rows.push(await hostnameRow(projects, repos, h, p));
  }
  return rows;
}

// --- hostnames tls -----------------------------------------------------------------------------------

function tlsService({ repos, config, masterKey }: Pick<RunContext, 'repos' | 'config' | 'masterKey'>): TlsService {
  // No `changed`: a running server sees this process's writes within 250 ms (src/edge/route.ts).
  return new TlsService({ repos, acme: config.acme, masterKey, now: () => Date.now() });
}

/** --redirect on|off and the like: undefined when not given. */
function onOff(flags: RunContext['flags'], name: string): boolean | undefined {
  const v = flags[name];
  if (v === undefined) return undefined;
  if (v === 'on') return true;
  if (v === 'off') return false;
  throw new AdminError('InvalidArgument', `--${name} takes on or off (got '${v.slice(0, 32)}')`);
}

/** The settings given as flags, as PATCH .../tls takes them; {} when none. */
function tlsSettingsFlags(flags: RunContext['flags']): Record<string, unknown> {
  const settings: Record<string, unknown> = {};
  const redirect = onOff(flags, 'redirect');
  if (redirect !== undefined) settings.redirectHttps = redirect;
  const hsts = flags.hsts;
  if (hsts !== undefined) {
    if (!/^\d{1,9}$/.test(hsts) || Number(hsts) > MAX_HSTS_SECONDS) {
      throw new AdminError('InvalidArgument', `--hsts takes whole seconds from 0 (no header) to ${MAX_HSTS_SECONDS} (two years) (got '${hsts.slice(0, 32)}')`);
    }
    settings.hstsMaxAge = Number(hsts);
  }
  const subdomains = onOff(flags, 'hsts-subdomains');
  if (subdomains !== undefined) settings.hstsIncludeSubdomains = subdomains;
  const minTls = flags['min-tls'];
  if (minTls !== undefined) {
    if (minTls !== '1.2' && minTls !== '1.3') throw new AdminError('InvalidArgument', `--min-tls takes 1.2 or 1.3 (got '${minTls.slice(0, 32)}')`);
    settings.minTls = minTls;
  }
  return settings;
}

const FILE_ERRORS: Readonly<Record<string, string>> = { ENOENT: 'no such file', EACCES: 'permission denied', EISDIR: 'a directory, not a file' };

/** The PEM text of --cert or --key, read with a bound (a certificate or key is a few kB). */
function pemFile(flag: 'cert' | 'key', file: string | undefined): string {
  if (file === undefined || file === '') {
    throw new AdminError('InvalidArgument', "--upload needs --cert FILE (the PEM chain, the hostname's certificate first) and --key FILE (its private key)");
  }
  try {
    const size = statSync(file).size;
    if (size > MAX_PEM_BYTES) throw new AdminError('InvalidCertificate', `--${flag} ${file} has ${size} bytes: a PEM certificate chain or key is at most ${MAX_PEM_BYTES / 1024} KiB`);
    return readFileSync(file, 'utf8');
  } catch (err) {
    if (err instanceof AdminError) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? '';
    throw new AdminError('InvalidArgument', `cannot read --${flag} ${file}: ${FILE_ERRORS[code] ?? (code || (err as Error).message)}`);
  }
}

/** A status as `key: value` lines for people (--json prints the TlsStatus itself). */
function tlsView(s: TlsStatus): Record<string, unknown> {
  const view: Record<string, unknown> = { hostname: s.hostname, state: s.state, summary: s.summary };
  const c = s.certificate;
  if (c) {
    view.certificate = c.source === 'acme' ? 'issued by ACME' : 'uploaded';
    view.names = c.names.join(', ');
    view.notBefore = c.notBefore;
    view.notAfter = c.expired ? `${c.notAfter} (expired)` : c.notAfter;
    view.renewsAt = c.renewsAt ?? (c.source === 'uploaded' ? 'never: an uploaded certificate is replaced by its owner' : 'not while ACME is off');
    view.fingerprint = c.fingerprint;
  } else {
    view.certificate = 'none';
  }
  if (s.lastError !== null) view.lastError = s.failures > 1 ? `${s.lastError} (${s.failures} failures in a row)` : s.lastError;
  if (s.nextAttemptAt !== null) view.nextAttemptAt = s.nextAttemptAt;
  view.acme = s.acme ? 'on' : 'off (the server obtains no certificates: --acme-directory)';
  view.redirectHttps = s.settings.redirectHttps ? 'on' : 'off';
  const { hstsMaxAge, hstsIncludeSubdomains } = s.settings;
  if (hstsMaxAge > 0) view.hsts = `max-age=${hstsMaxAge}${hstsIncludeSubdomains ? '; includeSubDomains' : ''}`;
  else view.hsts = hstsIncludeSubdomains ? 'off (includeSubDomains once --hsts is set)' : 'off';
  view.minTls = s.settings.minTls;
  return view;
}

const shown = (s: TlsStatus): Presented => new Presented(s, tlsView(s));

/** --issue: one ACME issuance in this process, now; exit 1 unless a certificate was issued. */
async function issueNow(ctx: RunContext, tls: TlsService, hostname: ProjectHostname, project: Project): Promise<Presented | FailedResult> {
  const { config, repos, masterKey } = ctx;
  if (config.acme.directory === '') {
    throw new AdminError(
      'AcmeOff',
      "automatic certificates are off: set --acme-directory URL (the CA's ACME directory, as the server has it; S3EDGE_ACME_DIRECTORY) or upload a certificate with --upload --cert FILE --key FILE",
    );
  }
  if (hostname.verifiedAt === null) throw new AdminError('InvalidArgument', `verify ${hostname.hostname} first (s3edge hostnames verify): certificates are issued for verified hostnames only`);
  if ((await tls.status(hostname)).certificate?.source === 'uploaded') {
    throw new AdminError('InvalidArgument', `${hostname.hostname} serves an uploaded certificate: remove it first (--remove) to have one issued`);
  }
  // pino for this logger only: no other admin command loads it.
  const { destination, pino } = await import('pino');
  // Only what the outcome does not say: an internal error's details, on stderr.
  const log = pino({ level: 'error' }, destination({ dest: 2, sync: true }));
  const issuance = new CertificateIssuance({ config: config.acme, repos, masterKey, now: () => Date.now(), log });
  const outcome = await issuance.issue({ hostnameId: hostname.id, hostname: hostname.hostname, userId: project.userId });
  const status = await tls.status(hostname);
  switch (outcome.outcome) {
    case 'issued':
      return new Presented({ outcome: 'issued', notAfter: iso(outcome.notAfter), tls: status }, { outcome: `issued: valid until ${iso(outcome.notAfter)}`, ...tlsView(status) });
    case 'failed':
    case 'limited':
      return new FailedResult(
        new Presented(
          { outcome: outcome.outcome, reason: outcome.reason, nextAttemptAt: iso(outcome.nextAttemptAt), tls: status },
          { outcome: outcome.outcome === 'failed' ? 'failed' : 'limited', reason: outcome.reason, nextAttemptAt: `${iso(outcome.nextAttemptAt)} (the server's ACME job tries again then)` },
        ),
      );
    case 'busy':
      return new FailedResult(
        new Presented(
          { outcome: 'busy', tls: status },
          { outcome: `busy: another process (the server's ACME job) is issuing ${hostname.hostname}'s certificate now; see s3edge hostnames tls ${hostname.hostname}` },
        ),
      );
  }
}

/** `hostnames tls NAME [settings] [--upload --cert FILE --key FILE | --remove | --issue]`. */
async function hostnameTls(ctx: RunContext): Promise<Presented | FailedResult> {
  const { flags } = ctx;
  const actions = (['upload', 'remove', 'issue'] as const).filter((a) => flags[a] !== undefined);
  const settings = tlsSettingsFlags(flags);
  const changes = Object.keys(settings).length > 0;
  if (actions.length > 1 || (actions.length === 1 && changes)) {
    throw new AdminError('InvalidArgument', 'give one of --upload, --remove, --issue or the settings (--redirect, --hsts, --hsts-subdomains, --min-tls) per command');
  }
  if ((flags.cert !== undefined || flags.key !== undefined) && actions[0] !== 'upload') throw new AdminError('InvalidArgument', '--cert and --key go with --upload');
  // The files are read before anything else: a wrong path changes nothing.
  const upload = actions[0] === 'upload' ? { certificate: pemFile('cert', flags.cert), privateKey: pemFile('key', flags.key) } : undefined;
  const { hostname, project } = await hostnameNamed(service(ctx), ctx.args.HOSTNAME as string);
  const tls = tlsService(ctx);
  if (actions[0] === 'issue') return issueNow(ctx, tls, hostname, project);
  if (upload) {
    try {
      return shown(await tls.upload(hostname, upload));
    } catch (err) {
      if (err instanceof ProjectError) throw new AdminError('InvalidCertificate', err.message);
      throw err;
    }
  }
  return refusals(async () => {
    if (actions[0] === 'remove') return shown(await tls.remove(hostname));
    return shown(changes ? await tls.updateSettings(hostname, settings) : await tls.status(hostname));
  });
}

export const PROJECT_COMMANDS: Record<string, Record<string, Command>> = {
  projects: {
    list: {
      args: [],
      flags: ['user'],
      summary: 'list projects with their hostname and deployment counts',
      example: 's3edge projects list --user alice',
      run: listProjects,
    },
    create: {
      args: ['NAME'],
      flags: ['user'],
      required: ['user'],
      summary: 'create a project of a user (hostnames, deployments and assets belong to one)',
      example: 's3edge projects create website --user alice',
      run: (ctx) =>
        refusals(async () => {
          const user = await userNamed(ctx.repos, ctx.flags.user);
          return projectRow(ctx.repos, await service(ctx).createProject(user.id, ctx.args.NAME, 'NAME'));
        }),
    },
    delete: {
      args: ['PROJECT'],
      flags: ['user'],
      required: ['user'],
      summary: 'delete a project (by name or id) with its deployments and hostnames; its assets stay, unlinked',
      example: 's3edge projects delete website --user alice',
      run: (ctx) =>
        refusals(async () => {
          const projects = service(ctx);
          const project = await projectNamed(projects, await userNamed(ctx.repos, ctx.flags.user), ctx.args.PROJECT as string);
          const { hostnames } = await projects.deleteProject(project);
          return { deleted: true, id: project.id, name: project.name, hostnames: hostnames.join(', ') };
        }),
    },
  },
  hostnames: {
    list: {
      args: [],
      flags: ['user', 'project'],
      summary: "list hostnames (a user's, or one project's) with their origin, rules and verification",
      example: 's3edge hostnames list --user alice --json',
      run: listHostnames,
    },
    add: {
      args: ['HOSTNAME'],
      flags: ['user', 'project'],
      required: ['user', 'project'],
      summary: 'add a hostname to a project; it is served once verified (publish the TXT record shown, then hostnames verify)',
      example: 's3edge hostnames add www.example.com --user alice --project website',
      run: (ctx) =>
        refusals(async () => {
          const projects = service(ctx);
          const project = await projectNamed(projects, await userNamed(ctx.repos, ctx.flags.user), ctx.flags.project as string);
          const added = await projects.addHostname(project, { hostname: ctx.args.HOSTNAME });
          return hostnameRow(projects, ctx.repos, added, project);
        }),
    },
    remove: {
      args: ['HOSTNAME'],
      flags: [],
      summary: 'remove a hostname: the proxy stops serving it',
      example: 's3edge hostnames remove www.example.com',
      run: (ctx) =>
        refusals(async () => {
          const projects = service(ctx);
          const { hostname } = await hostnameNamed(projects, ctx.args.HOSTNAME as string);
          await projects.removeHostname(hostname);
          return { removed: hostname.hostname };
        }),
    },
    verify: {
      args: ['HOSTNAME'],
      flags: ['operator'],
      summary: "look the hostname's TXT record up in DNS and mark it verified; --operator marks it verified without DNS",
      example: 's3edge hostnames verify www.example.com --operator',
      run: (ctx) =>
        refusals(async () => {
          const projects = service(ctx);
          const { hostname, project } = await hostnameNamed(projects, ctx.args.HOSTNAME as string);
          const verified = ctx.flags.operator !== undefined ? await projects.markVerified(hostname, 'operator') : await projects.verify(hostname);
          return hostnameRow(projects, ctx.repos, verified, project);
        }),
    },
    'set-origin': {
      args: ['HOSTNAME'],
      flags: ['url', 'preserve-host', 'bucket', 'index', 'error-document'],
      summary: "where the hostname's requests go: --url http(s)://host[:port] [--preserve-host], or --bucket NAME of the owner's [--index KEY] [--error-document KEY]",
      example: 's3edge hostnames set-origin www.example.com --url https://origin.example.net',
      run: (ctx) =>
        refusals(async () => {
          const projects = service(ctx);
          const { hostname, project } = await hostnameNamed(projects, ctx.args.HOSTNAME as string);
          return hostnameRow(projects, ctx.repos, await projects.setOrigin(project, hostname, originFlags(ctx.flags)), project);
        }),
    },
    'set-rules': {
      args: ['HOSTNAME'],
      flags: ['rules', 'rules-file'],
      summary: 'replace the hostname\'s protection rules (JSON, as PUT .../rules of the API takes them)',
      example: `s3edge hostnames set-rules www.example.com --rules '{"blockCountries":["XX"]}'`,
      run: (ctx) =>
        refusals(async () => {
          const projects = service(ctx);
          const { hostname, project } = await hostnameNamed(projects, ctx.args.HOSTNAME as string);
          return hostnameRow(projects, ctx.repos, await projects.setRules(hostname, rulesFlags(ctx.flags)), project);
        }),
    },
    tls: {
      args: ['HOSTNAME'],
      flags: ['redirect', 'hsts', 'hsts-subdomains', 'min-tls', 'upload', 'cert', 'key', 'remove', 'issue'],
      summary:
        "the hostname's HTTPS: its certificate's state and settings; change --redirect, --hsts (0: off), --hsts-subdomains, --min-tls; " +
        'or --upload --cert FILE --key FILE, --remove, --issue (ACME now, in this process)',
      example: 's3edge hostnames tls www.example.com --redirect on --hsts 31536000',
      run: hostnameTls,
    },
  },
};
