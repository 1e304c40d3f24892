// Projects, their deployments and hostnames (migration 012). Origins and rules are stored as JSON that
// src/projects validates before it is written; rows read back are trusted to have that shape, with
// defaults for missing rule fields (rules written by an older version stay readable).
import type { Statement } from '../sqlite/index.js';
import { newId } from '../../auth/ids.js';
import { NO_RULES, type EdgeRoute, type HostRules, type Origin } from '../../edge/model.js';
import type { Db } from '../open.js';
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

export class ProjectsRepo {
  private readonly insertProjectStmt: Statement<[string, string, string, number]>;
  private readonly projectStmt: Statement<[string], ProjectRow>;
  private readonly insertHostnameStmt: Statement<[string, string, string, string | null, string, string, number, number]>;
  private readonly hostnameStmt: Statement<[string], HostnameRow>;
  private readonly hostnameByNameStmt: Statement<[string], HostnameRow>;
  private readonly setOriginStmt: Statement<[string | null, number, string]>;
  private readonly setRulesStmt: Statement<[string, number, string]>;
  private readonly verifyStmt: Statement<[number, 'dns' | 'operator', number, string]>;
  private readonly routesStmt: Statement<[], RouteRow>;
  private readonly projectsOfUserStmt: Statement<[string], ProjectRow>;
  private readonly projectByNameStmt: Statement<[string, string], ProjectRow>;
  private readonly deleteProjectStmt: Statement<[string]>;
  private readonly insertDeploymentStmt: Statement<[string, string, string, number]>;
  private readonly deploymentStmt: Statement<[string], DeploymentRow>;
  private readonly deploymentsStmt: Statement<[string], DeploymentRow>;
  private readonly hostnamesOfProjectStmt: Statement<[string], HostnameRow>;
  private readonly hostnamesOfUserStmt: Statement<[string], HostnameRow>;
  private readonly allHostnamesStmt: Statement<[], HostnameRow>;
  private readonly deleteHostnameStmt: Statement<[string]>;

  constructor(
    db: Db,
    private readonly clock: () => number = Date.now,
  ) {
    this.insertProjectStmt = db.prepare('INSERT INTO projects (id, user_id, name, created_at) VALUES (?, ?, ?, ?)');
    this.projectStmt = db.prepare(`SELECT ${PROJECT_COLUMNS} FROM projects WHERE id = ?`);
    this.insertHostnameStmt = db.prepare(
      `INSERT INTO project_hostnames (id, hostname, project_id, origin, rules, verification_token, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.hostnameStmt = db.prepare(`SELECT ${HOSTNAME_COLUMNS} FROM project_hostnames WHERE id = ?`);
    this.hostnameByNameStmt = db.prepare(`SELECT ${HOSTNAME_COLUMNS} FROM project_hostnames WHERE hostname = ?`);
    this.setOriginStmt = db.prepare('UPDATE project_hostnames SET origin = ?, updated_at = ? WHERE id = ?');
    this.setRulesStmt = db.prepare('UPDATE project_hostnames SET rules = ?, updated_at = ? WHERE id = ?');
    this.verifyStmt = db.prepare('UPDATE project_hostnames SET verified_at = ?, verified_by = ?, updated_at = ? WHERE id = ?');
    this.routesStmt = db.prepare(
      `SELECT h.id, h.hostname, h.project_id, p.user_id, h.origin, h.rules
       FROM project_hostnames h JOIN projects p ON p.id = h.project_id WHERE h.verified_at IS NOT NULL`,
    );
    this.projectsOfUserStmt = db.prepare(`SELECT ${PROJECT_COLUMNS} FROM projects WHERE user_id = ? ORDER BY created_at, id`);
    this.projectByNameStmt = db.prepare(`SELECT ${PROJECT_COLUMNS} FROM projects WHERE user_id = ? AND name = ?`);
    this.deleteProjectStmt = db.prepare('DELETE FROM projects WHERE id = ?');
    this.insertDeploymentStmt = db.prepare('INSERT INTO deployments (id, project_id, name, created_at) VALUES (?, ?, ?, ?)');
    this.deploymentStmt = db.prepare(`SELECT ${DEPLOYMENT_COLUMNS} FROM deployments WHERE id = ?`);
    this.deploymentsStmt = db.prepare(`SELECT ${DEPLOYMENT_COLUMNS} FROM deployments WHERE project_id = ? ORDER BY created_at DESC, id`);
    this.hostnamesOfProjectStmt = db.prepare(`SELECT ${HOSTNAME_COLUMNS} FROM project_hostnames WHERE project_id = ? ORDER BY hostname`);
    this.hostnamesOfUserStmt = db.prepare(
      `SELECT ${HOSTNAME_COLUMNS.split(', ').map((c) => `h.${c}`).join(', ')}
       FROM project_hostnames h JOIN projects p ON p.id = h.project_id WHERE p.user_id = ? ORDER BY h.hostname`,
    );
    this.allHostnamesStmt = db.prepare(`SELECT ${HOSTNAME_COLUMNS} FROM project_hostnames ORDER BY hostname`);
    this.deleteHostnameStmt = db.prepare('DELETE FROM project_hostnames WHERE id = ?');
  }

  /** A new project; ConstraintError('duplicate') when the user has one of that name. */
  createProject(userId: string, name: string): Project {
    const id = newId();
    try {
      this.insertProjectStmt.run(id, userId, name, this.clock());
    } catch (err) {
      if (isUniqueViolation(err)) throw new ConstraintError('duplicate', `project ${name} exists`);
      throw err;
    }
    return this.project(id) as Project;
  }

  project(id: string): Project | undefined {
    const r = this.projectStmt.get(id);
    return r && toProject(r);
  }

  /** The user's projects, oldest first. */
  projectsOfUser(userId: string): Project[] {
    return this.projectsOfUserStmt.all(userId).map(toProject);
  }

  projectByName(userId: string, name: string): Project | undefined {
    const r = this.projectByNameStmt.get(userId, name);
    return r && toProject(r);
  }

  /** Deletes the project; its deployments and hostnames go with it (ON DELETE CASCADE). */
  deleteProject(id: string): boolean {
    return this.deleteProjectStmt.run(id).changes === 1;
  }

  /** A new deployment; ConstraintError('in_use') when the project is gone. */
  createDeployment(projectId: string, name: string): Deployment {
    const id = newId();
    try {
      this.insertDeploymentStmt.run(id, projectId, name, this.clock());
    } catch (err) {
      if (isForeignKeyViolation(err)) throw new ConstraintError('in_use', 'the project was deleted');
      throw err;
    }
    return this.deployment(id) as Deployment;
  }

  deployment(id: string): Deployment | undefined {
    const r = this.deploymentStmt.get(id);
    return r && toDeployment(r);
  }

  /** A project's deployments, newest first. */
  deployments(projectId: string): Deployment[] {
    return this.deploymentsStmt.all(projectId).map(toDeployment);
  }

  /** A project's hostnames, by name. */
  hostnamesOfProject(projectId: string): ProjectHostname[] {
    return this.hostnamesOfProjectStmt.all(projectId).map(toHostname);
  }

  /** Every hostname of every project of the user, by name (verified or not). */
  hostnamesOfUser(userId: string): ProjectHostname[] {
    return this.hostnamesOfUserStmt.all(userId).map(toHostname);
  }

  /** Every hostname, by name (the operator's list). */
  allHostnames(): ProjectHostname[] {
    return this.allHostnamesStmt.all().map(toHostname);
  }

  deleteHostname(id: string): boolean {
    return this.deleteHostnameStmt.run(id).changes === 1;
  }

  /** A new, unverified hostname; ConstraintError('duplicate') when any project has it. */
  addHostname(projectId: string, hostname: string, verificationToken: string, origin: Origin | null = null, rules: HostRules = NO_RULES): ProjectHostname {
    const id = newId();
    const now = this.clock();
    try {
      this.insertHostnameStmt.run(id, hostname, projectId, origin && JSON.stringify(origin), JSON.stringify(rules), verificationToken, now, now);
    } catch (err) {
      if (isUniqueViolation(err)) throw new ConstraintError('duplicate', `hostname ${hostname} is taken`);
      throw err;
    }
    return this.hostname(id) as ProjectHostname;
  }

  hostname(id: string): ProjectHostname | undefined {
    const r = this.hostnameStmt.get(id);
    return r && toHostname(r);
  }

  hostnameByName(hostname: string): ProjectHostname | undefined {
    const r = this.hostnameByNameStmt.get(hostname);
    return r && toHostname(r);
  }

  setOrigin(hostnameId: string, origin: Origin | null): boolean {
    return this.setOriginStmt.run(origin && JSON.stringify(origin), this.clock(), hostnameId).changes === 1;
  }

  setRules(hostnameId: string, rules: HostRules): boolean {
    return this.setRulesStmt.run(JSON.stringify(rules), this.clock(), hostnameId).changes === 1;
  }

  markVerified(hostnameId: string, by: 'dns' | 'operator'): boolean {
    const now = this.clock();
    return this.verifyStmt.run(now, by, now, hostnameId).changes === 1;
  }

  /** Every verified hostname with what the proxy needs (src/edge/route.ts). */
  routes(): EdgeRoute[] {
    return this.routesStmt.all().map((r) => ({
      hostnameId: r.id,
      hostname: r.hostname,
      projectId: r.project_id,
      ownerId: r.user_id,
      origin: parseOrigin(r.origin),
      rules: parseRules(r.rules),
    }));
  }
}
