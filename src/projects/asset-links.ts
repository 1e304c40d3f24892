// An uploaded asset's project and deployment (the upload form's projectId and deploymentId, SPEC.md §4
// note 4): they must name one of the uploader's projects and a deployment of it. A deploymentId alone
// links its project too. Another user's project is refused exactly like one that does not exist.
import type { Repos } from '../db/repos/index.js';
import { invalid } from './errors.js';

export interface AssetLinks {
  projectId: string | null;
  deploymentId: string | null;
}

/** The links to store, or ProjectError 'invalid' naming the field. */
export async function checkAssetLinks(repos: Pick<Repos, 'projects'>, userId: string, given: AssetLinks): Promise<AssetLinks> {
  let projectId = given.projectId;
  if (projectId !== null) {
    const project = await repos.projects.project(projectId);
    if (!project || project.userId !== userId) throw invalid('projectId does not name one of your projects');
  }
  if (given.deploymentId === null) return { projectId, deploymentId: null };
  const deployment = await repos.projects.deployment(given.deploymentId);
  const owner = deployment && (await repos.projects.project(deployment.projectId));
  if (!deployment || !owner || owner.userId !== userId) throw invalid('deploymentId does not name a deployment of your projects');
  if (projectId !== null && deployment.projectId !== projectId) throw invalid('deploymentId is a deployment of another project than projectId');
  projectId = deployment.projectId;
  return { projectId, deploymentId: deployment.id };
}
