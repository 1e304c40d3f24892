// Projects, their deployments and hostnames (migration 012). Origins and rules are stored as JSON that
// src/projects validates before it is written; rows read back are trusted to have that shape, with
// defaults for missing rule fields (rules written by an older version stay readable).
import { newId } from '../ids.js';
import { NO_RULES, type EdgeRoute, type HostRules, type Origin, type RouteTls } from './hostname-model.js';
import type { SqlExecutor } from '../store/types.js';
import { ConstraintError, isForeignKeyViolation, isUniqueViolation } from './errors.js';

export interface Project {
  id: string;
  userId: string;
  name: string;
  createdAt: number;
}

export interface Deployment {
  id: string;
  projectId: string;
  name: string;
  createdAt: number;
}

export interface ProjectHostname {
  id: string;
  hostname: string;
  projectId: string;
  origin: Origin | null;
  rules: HostRules;
  verificationToken: string;
  verifiedAt: number | null;
  verifiedBy: 'dns' | 'operator' | null;
  createdAt: number;
  updatedAt: number;
}

interface ProjectRow {
  id: string;
  user_id: string;
  name: string;
  created_at: number;
}

interface DeploymentRow {
  id: string;
  project_id: string;
  name: string;
  created_at: number;
}

interface HostnameRow {
  id: string;
  hostname: string;
  project_id: string;
  origin: string | null;
  rules: string;
  verification_token: string;
  verified_at: number | null;
  verified_by: 'dns' | 'operator' | null;
  created_at: number;
  updated_at: number;
}

interface RouteRow {
  id: string;
  hostname: string;
  project_id: string;
  user_id: string;
  origin: string | null;
  rules: string;
  tls_id: string | null;
  redirect_https: number | null;
  hsts_max_age: number | null;
  hsts_subdomains: number | null;
  min_tls: '1.2' | '1.3' | null;
  cert_pem: string | null;
  key_enc: string | null;
  fingerprint: string | null;
  not_after: number | null;
}

/** The Strict-Transport-Security value of a max-age ('' for 0: no header). */
export function hstsValue(maxAge: number, includeSubdomains: boolean): string {
  return maxAge > 0 ? `max-age=${maxAge}${includeSubdomains ? '; includeSubDomains' : ''}` : '';
}

function routeTls(r: RouteRow): RouteTls | null {
  if (r.tls_id === null) return null;
  return {
    redirectHttps: Number(r.redirect_https) === 1,
    hsts: hstsValue(Number(r.hsts_max_age), Number(r.hsts_subdomains) === 1),
    minTls: r.min_tls ?? '1.2',
    certificate:
      r.cert_pem !== null && r.key_enc !== null
        ? { pem: r.cert_pem, keyEnc: r.key_enc, fingerprint: r.fingerprint ?? '', notAfter: Number(r.not_after) }
        : null,
  };
}

function toProject(r: ProjectRow): Project {
  return { id: r.id, userId: r.user_id, name: r.name, createdAt: r.created_at };
}

function toDeployment(r: DeploymentRow): Deployment {
  return { id: r.id, projectId: r.project_id, name: r.name, createdAt: r.created_at };
}

/** Stored rules over the defaults: a field added later reads as "no rule" on older rows. */
export function parseRules(json: string): HostRules {
  const parsed = JSON.parse(json) as Partial<HostRules>;
  return { ...NO_RULES, ...parsed };
}

function parseOrigin(json: string | null): Origin | null {
  return json === null ? null : (JSON.parse(json) as Origin);
}

function toHostname(r: HostnameRow): ProjectHostname {
  return {
    id: r.id,
    hostname: r.hostname,
    projectId: r.project_id,
    origin: parseOrigin(r.origin),
    rules: parseRules(r.rules),
    verificationToken: r.verification_token,
    verifiedAt: r.verified_at,
    verifiedBy: r.verified_by,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

const PROJECT_COLUMNS = 'id, user_id, name, created_at';
const HOSTNAME_COLUMNS = 'id, hostname, project_id, origin, rules, verification_token, verified_at, verified_by, created_at, updated_at';
const DEPLOYMENT_COLUMNS = 'id, project_id, name, created_at';

const INSERT_PROJECT = `INSERT INTO projects (id, user_id, name, created_at) VALUES (?, ?, ?, ?) RETURNING ${PROJECT_COLUMNS}`;
const PROJECT = `SELECT ${PROJECT_COLUMNS} FROM projects WHERE id = ?`;
const INSERT_HOSTNAME = `INSERT INTO project_hostnames (id, hostname, project_id, origin, rules, verification_token, created_at, updated_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING ${HOSTNAME_COLUMNS}`;
const HOSTNAME = `SELECT ${HOSTNAME_COLUMNS} FROM project_hostnames WHERE id = ?`;
const HOSTNAME_BY_NAME = `SELECT ${HOSTNAME_COLUMNS} FROM project_hostnames WHERE hostname = ?`;
const SET_ORIGIN = 'UPDATE project_hostnames SET origin = ?, updated_at = ? WHERE id = ?';
const SET_RULES = 'UPDATE project_hostnames SET rules = ?, updated_at = ? WHERE id = ?';
const VERIFY = 'UPDATE project_hostnames SET verified_at = ?, verified_by = ?, updated_at = ? WHERE id = ?';
const ROUTES = `SELECT h.id, h.hostname, h.project_id, p.user_id, h.origin, h.rules, t.hostname_id AS tls_id, t.redirect_https, t.hsts_max_age,
  t.hsts_subdomains, t.min_tls, t.cert_pem, t.key_enc, t.fingerprint, t.not_after
  FROM project_hostnames h JOIN projects p ON p.id = h.project_id LEFT JOIN hostname_tls t ON t.hostname_id = h.id
  WHERE h.verified_at IS NOT NULL ORDER BY h.hostname`;
const PROJECTS_OF_USER = `SELECT ${PROJECT_COLUMNS} FROM projects WHERE user_id = ? ORDER BY created_at, id`;
const PROJECT_BY_NAME = `SELECT ${PROJECT_COLUMNS} FROM projects WHERE user_id = ? AND name = ?`;
const DELETE_PROJECT = 'DELETE FROM projects WHERE id = ?';
const INSERT_DEPLOYMENT = `INSERT INTO deployments (id, project_id, name, created_at) VALUES (?, ?, ?, ?) RETURNING ${DEPLOYMENT_COLUMNS}`;
const DEPLOYMENT = `SELECT ${DEPLOYMENT_COLUMNS} FROM deployments WHERE id = ?`;
const DEPLOYMENTS = `SELECT ${DEPLOYMENT_COLUMNS} FROM deployments WHERE project_id = ? ORDER BY created_at DESC, id`;
const HOSTNAMES_OF_PROJECT = `SELECT ${HOSTNAME_COLUMNS} FROM project_hostnames WHERE project_id = ? ORDER BY hostname`;
const HOSTNAMES_OF_USER = `SELECT ${HOSTNAME_COLUMNS.split(', ').map((c) => `h.${c}`).join(', ')}
  FROM project_hostnames h JOIN projects p ON p.id = h.project_id WHERE p.user_id = ? ORDER BY h.hostname`;
const ALL_HOSTNAMES = `SELECT ${HOSTNAME_COLUMNS} FROM project_hostnames ORDER BY hostname`;
const DELETE_HOSTNAME = 'DELETE FROM project_hostnames WHERE id = ?';

export class ProjectsRepo {
  constructor(
    private readonly db: SqlExecutor,
    private readonly clock: () => number = Date.now,
  ) {}

  /** A new project; ConstraintError('duplicate') when the user has one of that name. */
  async createProject(userId: string, name: string): Promise<Project> {
    try {
      return toProject((await this.db.get<ProjectRow>(INSERT_PROJECT, [newId(), userId, name, this.clock()])) as ProjectRow);
    } catch (err) {
      if (isUniqueViolation(err)) throw new ConstraintError('duplicate', `project ${name} exists`);
      throw err;
    }
  }

  async project(id: string): Promise<Project | undefined> {
    const r = await this.db.get<ProjectRow>(PROJECT, [id]);
    return r && toProject(r);
  }

  /** The user's projects, oldest first. */
  async projectsOfUser(userId: string): Promise<Project[]> {
    return (await this.db.all<ProjectRow>(PROJECTS_OF_USER, [userId])).map(toProject);
  }

  async projectByName(userId: string, name: string): Promise<Project | undefined> {
    const r = await this.db.get<ProjectRow>(PROJECT_BY_NAME, [userId, name]);
    return r && toProject(r);
  }

  /** Deletes the project; its deployments and hostnames go with it (ON DELETE CASCADE). */
  async deleteProject(id: string): Promise<boolean> {
    return (await this.db.run(DELETE_PROJECT, [id])).changes === 1;
  }

  /** A new deployment; ConstraintError('in_use') when the project is gone. */
  async createDeployment(projectId: string, name: string): Promise<Deployment> {
    try {
      return toDeployment((await this.db.get<DeploymentRow>(INSERT_DEPLOYMENT, [newId(), projectId, name, this.clock()])) as DeploymentRow);
    } catch (err) {
      if (isForeignKeyViolation(err)) throw new ConstraintError('in_use', 'the project was deleted');
      throw err;
    }
  }

  async deployment(id: string): Promise<Deployment | undefined> {
    const r = await this.db.get<DeploymentRow>(DEPLOYMENT, [id]);
    return r && toDeployment(r);
  }

  /** A project's deployments, newest first. */
  async deployments(projectId: string): Promise<Deployment[]> {
    return (await this.db.all<DeploymentRow>(DEPLOYMENTS, [projectId])).map(toDeployment);
  }

  /** A project's hostnames, by name. */
  async hostnamesOfProject(projectId: string): Promise<ProjectHostname[]> {
    return (await this.db.all<HostnameRow>(HOSTNAMES_OF_PROJECT, [projectId])).map(toHostname);
  }

  /** Every hostname of every project of the user, by name (verified or not). */
  async hostnamesOfUser(userId: string): Promise<ProjectHostname[]> {
    return (await this.db.all<HostnameRow>(HOSTNAMES_OF_USER, [userId])).map(toHostname);
  }

  /** Every hostname, by name (the operator's list). */
  async allHostnames(): Promise<ProjectHostname[]> {
    return (await this.db.all<HostnameRow>(ALL_HOSTNAMES)).map(toHostname);
  }

  async deleteHostname(id: string): Promise<boolean> {
    return (await this.db.run(DELETE_HOSTNAME, [id])).changes === 1;
  }

  /** A new, unverified hostname; ConstraintError('duplicate') when any project has it. */
  async addHostname(projectId: string, hostname: string, verificationToken: string, origin: Origin | null = null, rules: HostRules = NO_RULES): Promise<ProjectHostname> {
    const now = this.clock();
    try {
      const r = await this.db.get<HostnameRow>(INSERT_HOSTNAME, [newId(), hostname, projectId, origin && JSON.stringify(origin), JSON.stringify(rules), verificationToken, now, now]);
      return toHostname(r as HostnameRow);
    } catch (err) {
      if (isUniqueViolation(err)) throw new ConstraintError('duplicate', `hostname ${hostname} is taken`);
      throw err;
    }
  }

  async hostname(id: string): Promise<ProjectHostname | undefined> {
    const r = await this.db.get<HostnameRow>(HOSTNAME, [id]);
    return r && toHostname(r);
  }

  async hostnameByName(hostname: string): Promise<ProjectHostname | undefined> {
    const r = await this.db.get<HostnameRow>(HOSTNAME_BY_NAME, [hostname]);
    return r && toHostname(r);
  }

  async setOrigin(hostnameId: string, origin: Origin | null): Promise<boolean> {
    return (await this.db.run(SET_ORIGIN, [origin && JSON.stringify(origin), this.clock(), hostnameId])).changes === 1;
  }

  async setRules(hostnameId: string, rules: HostRules): Promise<boolean> {
    return (await this.db.run(SET_RULES, [JSON.stringify(rules), this.clock(), hostnameId])).changes === 1;
  }

  async markVerified(hostnameId: string, by: 'dns' | 'operator'): Promise<boolean> {
    const now = this.clock();
    return (await this.db.run(VERIFY, [now, by, now, hostnameId])).changes === 1;
  }

  /** Every verified hostname with what the proxy needs (src/edge/route.ts). */
  async routes(): Promise<EdgeRoute[]> {
    return (await this.db.all<RouteRow>(ROUTES)).map((r) => ({
      hostnameId: r.id,
      hostname: r.hostname,
      projectId: r.project_id,
      ownerId: r.user_id,
      origin: parseOrigin(r.origin),
      rules: parseRules(r.rules),
      tls: routeTls(r),
    }));
  }
}
