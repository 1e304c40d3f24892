// Projects, their deployments and hostnames as users (the API) and operators (the admin CLI) manage them.
// Input is checked here, once, for both: hostnames (hostname.ts), origins (origin.ts), rules
// (src/proxy/rules.ts validateRules). Ownership is the caller's: the API reaches a project through ownedProject (another
// user's is "not found"), the CLI through the hostname or the user it names. Every write tells `changed`
// so the server's route table reloads at once; another process's write (the CLI) reaches a running
// server within 250 ms anyway (src/edge/route.ts).
import { domainToASCII } from 'node:url';
import type { Config } from '../config/schema.js';
import { ConstraintError, type Deployment, type Project, type ProjectHostname, type Repos } from '../db/repos/index.js';
import { NO_RULES, type HostRules, type Origin } from '../db/repos/hostname-model.js';
import { validateRules } from '../proxy/rules.js';
import { invalid, notFound, ProjectError } from './errors.js';
import { HostnameError, normalizeHostname, reservedHostnames } from './hostname.js';
import { OriginError, parseOriginInput, type OriginInput } from './origin.js';
import { checkVerification, newVerificationToken, verificationRecord, type TxtLookup, type VerificationRecord } from './verification.js';

export interface ProjectsDeps {
  repos: Repos;
  config: Pick<Config, 'edge' | 'cdn' | 's3Domains' | 'publicUrl'>;
  lookupTxt: TxtLookup;
  /** After every write, awaited (the server reloads its route table); none in the CLI. */
  changed?: () => void | Promise<void>;
  /**
   * Drops a hostname's cached proxy answers (by hostname id), returning how many; none in the CLI. A
   * hostname removed or given another origin, by any process, is purged by the route table anyway.
   */
  purgeCache?: (hostnameId: string) => number;
}

/** An origin as shown to its owner: a bucket by name (null when it has been deleted since). */
export type OriginView =
  | Extract<Origin, { kind: 'url' }>
  | { kind: 'bucket'; bucket: string | null; indexDocument: string; errorDocument: string | null };

/** Names of projects and deployments: one line of printable text. */
const MAX_NAME_CHARS = 100;

function checkedName(raw: unknown, field: string): string {
  if (typeof raw !== 'string' || raw.trim() === '') throw invalid(`${field} must be a non-empty name`);
  const name = raw.trim();
  if ([...name].length > MAX_NAME_CHARS) throw invalid(`${field} must be at most ${MAX_NAME_CHARS} characters`);
  if (/[\p{Cc}\p{Cf}\u2028\u2029]/u.test(name)) throw invalid(`${field} must not contain control or invisible characters`);
  return name;
}

function at(where: string, field: string): string {
  return where === '' ? field : `${where}/${field}`;
}

/** The rules a user sent, complete (src/proxy/rules.ts): its message names the field (`rules.blockIps[2]: ...`). */
function checkedRules(input: unknown): HostRules {
  const checked = validateRules(input);
  if ('error' in checked) throw invalid(checked.error);
  return checked.rules;
}

/** A hostname as typed, in its stored form: looked up, not validated, so a stored name stays reachable even if the gateway's own names changed. */
function lookupName(raw: string): string {
  return domainToASCII(raw.trim().toLowerCase().replace(/\.$/, '')) || raw.trim().toLowerCase();
}

export class ProjectsService {
  private readonly reserved: string[];

  constructor(private readonly deps: ProjectsDeps) {
    this.reserved = reservedHostnames(deps.config);
  }

  private get repos(): Repos {
    return this.deps.repos;
  }

  private async changed(): Promise<void> {
    await this.deps.changed?.();
  }

  // --- projects ------------------------------------------------------------------------------------

  async projectsOf(userId: string): Promise<Project[]> {
    return this.repos.projects.projectsOfUser(userId);
  }

  async createProject(userId: string, rawName: unknown, field = 'name'): Promise<Project> {
    const name = checkedName(rawName, field);
    try {
      return await this.repos.projects.createProject(userId, name);
    } catch (err) {
      if (err instanceof ConstraintError && err.reason === 'duplicate') {
        throw new ProjectError('conflict', 'project_exists', `You already have a project named '${name}'`);
      }
      throw err;
    }
  }

  /** The user's project; another user's is "not found" too. */
  async ownedProject(userId: string, projectId: string): Promise<Project> {
    const project = await this.repos.projects.project(projectId);
    if (!project || project.userId !== userId) throw notFound('Project');
    return project;
  }

  /** The user's project by id or by name (the CLI). */
  async projectOf(userId: string, idOrName: string): Promise<Project> {
    const byId = await this.repos.projects.project(idOrName);
    if (byId && byId.userId === userId) return byId;
    const byName = await this.repos.projects.projectByName(userId, idOrName.trim());
    if (!byName) throw notFound('Project');
    return byName;
  }

  /**
   * Deletes the project with its deployments and hostnames; its assets stay, unlinked. The hostnames
   * stop being served at once, and their cached answers are dropped.
   */
  async deleteProject(project: Project): Promise<{ hostnames: string[] }> {
    const hostnames = await this.repos.transact(async (r) => {
      const names = (await r.projects.hostnamesOfProject(project.id)).map((h) => h.hostname);
      await r.assets.unlinkProject(project.id);
      if (!(await r.projects.deleteProject(project.id))) throw notFound('Project');
      return names;
    });
    await this.changed();
    return { hostnames };
  }

  // --- deployments ---------------------------------------------------------------------------------

  async deployments(project: Project): Promise<Deployment[]> {
    return this.repos.projects.deployments(project.id);
  }

  async createDeployment(project: Project, rawName: unknown, field = 'name'): Promise<Deployment> {
    const name = checkedName(rawName, field);
    try {
      return await this.repos.projects.createDeployment(project.id, name);
    } catch (err) {
      if (err instanceof ConstraintError && err.reason === 'in_use') throw notFound('Project');
      throw err;
    }
  }

  /** A deployment of this project. */
  async deploymentOf(project: Project, deploymentId: string): Promise<Deployment> {
    const deployment = await this.repos.projects.deployment(deploymentId);
    if (!deployment || deployment.projectId !== project.id) throw notFound('Deployment');
    return deployment;
  }

  // --- hostnames -----------------------------------------------------------------------------------

  async hostnames(project: Project): Promise<ProjectHostname[]> {
    return this.repos.projects.hostnamesOfProject(project.id);
  }

  async hostnamesOfUser(userId: string): Promise<ProjectHostname[]> {
    return this.repos.projects.hostnamesOfUser(userId);
  }

  async allHostnames(): Promise<ProjectHostname[]> {
    return this.repos.projects.allHostnames();
  }

  /** A hostname of this project. */
  async hostnameOf(project: Project, hostnameId: string): Promise<ProjectHostname> {
    const hostname = await this.repos.projects.hostname(hostnameId);
    if (!hostname || hostname.projectId !== project.id) throw notFound('Hostname');
    return hostname;
  }

  /** A hostname of this project by its id, else by its name (the API's TLS routes take either). */
  async hostnameOfByIdOrName(project: Project, idOrName: string): Promise<ProjectHostname> {
    const byId = await this.repos.projects.hostname(idOrName);
    if (byId && byId.projectId === project.id) return byId;
    const byName = await this.repos.projects.hostnameByName(lookupName(idOrName));
    if (!byName || byName.projectId !== project.id) throw notFound('Hostname');
    return byName;
  }

  /** A hostname by name, whoever owns it (the operator's CLI), with its project. */
  async hostnameByName(raw: string): Promise<{ hostname: ProjectHostname; project: Project }> {
    const name = lookupName(raw);
    const hostname = await this.repos.projects.hostnameByName(name);
    const project = hostname && (await this.repos.projects.project(hostname.projectId));
    if (!hostname || !project) throw new ProjectError('not_found', 'not_found', `No project hostname '${name.slice(0, 253)}'`);
    return { hostname, project };
  }

  /**
   * Adds an unverified hostname (with its origin and rules when given); ProjectError 'hostname_taken'
   * when any project has it. Everything is checked before anything is written.
   */
  async addHostname(project: Project, input: { hostname: unknown; origin?: unknown; rules?: unknown }, where = ''): Promise<ProjectHostname> {
    let name: string;
    try {
      name = normalizeHostname(input.hostname, this.reserved);
    } catch (err) {
      if (err instanceof HostnameError) throw invalid(`${at(where, 'hostname')}: ${err.message}`);
      throw err;
    }
    const origin = input.origin === undefined || input.origin === null ? null : await this.resolveOrigin(project, input.origin, at(where, 'origin'));
    const rules = input.rules === undefined ? NO_RULES : checkedRules(input.rules);
    let added: ProjectHostname;
    try {
      added = await this.repos.projects.addHostname(project.id, name, newVerificationToken(), origin, rules);
    } catch (err) {
      if (err instanceof ConstraintError && err.reason === 'duplicate') {
        throw new ProjectError('conflict', 'hostname_taken', `The hostname ${name} is already used by a project`);
      }
      throw err;
    }
    await this.changed();
    return added;
  }

  /** Stops serving the hostname at once and drops its cached answers. */
  async removeHostname(hostname: ProjectHostname): Promise<void> {
    if (!(await this.repos.projects.deleteHostname(hostname.id))) throw notFound('Hostname');
    await this.changed();
  }

  async setOrigin(project: Project, hostname: ProjectHostname, input: unknown, where = ''): Promise<ProjectHostname> {
    const origin = await this.resolveOrigin(project, input, where);
    if (!(await this.repos.projects.setOrigin(hostname.id, origin))) throw notFound('Hostname');
    await this.changed();
    return this.reread(hostname);
  }

  async setRules(hostname: ProjectHostname, input: unknown): Promise<ProjectHostname> {
    const rules = checkedRules(input);
    if (!(await this.repos.projects.setRules(hostname.id, rules))) throw notFound('Hostname');
    await this.changed();
    return this.reread(hostname);
  }

  /** The TXT record that proves control of the hostname. */
  verificationRecord(hostname: ProjectHostname): VerificationRecord {
    return verificationRecord(hostname.hostname, hostname.verificationToken, this.deps.config.edge.verificationPrefix);
  }

  /**
   * Looks the verification record up in DNS; marks the hostname verified ('dns') when it is there, else
   * ProjectError 'verification_failed' saying what was found. A verified hostname stays verified.
   */
  async verify(hostname: ProjectHostname): Promise<ProjectHostname> {
    if (hostname.verifiedAt !== null) return hostname;
    const outcome = await checkVerification(this.deps.lookupTxt, this.verificationRecord(hostname));
    if (!outcome.verified) throw new ProjectError('verification_failed', 'verification_failed', outcome.message);
    return this.markVerified(hostname, 'dns');
  }

  /** The operator's override: verified without DNS. */
  async markVerified(hostname: ProjectHostname, by: 'dns' | 'operator'): Promise<ProjectHostname> {
    if (!(await this.repos.projects.markVerified(hostname.id, by))) throw notFound('Hostname');
    await this.changed();
    return this.reread(hostname);
  }

  /** Drops the hostname's cached proxy answers; how many were dropped. */
  purge(hostname: ProjectHostname): number {
    return this.deps.purgeCache?.(hostname.id) ?? 0;
  }

  /** What the owner sees of an origin: the bucket by name. */
  async originView(origin: Origin | null): Promise<OriginView | null> {
    if (origin === null || origin.kind === 'url') return origin;
    const bucket = await this.repos.buckets.getById(origin.bucketId);
    return { kind: 'bucket', bucket: bucket?.name ?? null, indexDocument: origin.indexDocument, errorDocument: origin.errorDocument };
  }

  // --- internals -----------------------------------------------------------------------------------

  /** A checked origin; a bucket must be the project owner's. */
  private async resolveOrigin(project: Project, input: unknown, where: string): Promise<Origin> {
    let given: OriginInput;
    try {
      given = parseOriginInput(input, { allowPrivateAddresses: this.deps.config.edge.allowPrivateOrigins }, where);
    } catch (err) {
      if (err instanceof OriginError) throw invalid(err.message);
      throw err;
    }
    if (given.kind === 'url') return given;
    const bucket = await this.repos.buckets.getByName(given.bucket);
    if (!bucket || bucket.ownerId !== project.userId) {
      throw invalid(`${at(where, 'bucket')}: no bucket named '${given.bucket.slice(0, 64)}' among the project owner's buckets`);
    }
    return { kind: 'bucket', bucketId: bucket.id, indexDocument: given.indexDocument, errorDocument: given.errorDocument };
  }

  private async reread(hostname: ProjectHostname): Promise<ProjectHostname> {
    const now = await this.repos.projects.hostname(hostname.id);
    if (!now) throw notFound('Hostname');
    return now;
  }
}
