// The caller's own bucket or asset by name or id: the same 404 whether it is missing or someone
// else's, so the API never reveals what other users have.
import type { AppContext } from '../../context.js';
import type { AssetRecord } from '../../db/repos/assets.js';
import type { Bucket, Project } from '../../db/repos/index.js';
import { notFound } from '../errors.js';

export const BUCKET_NOT_FOUND = 'Bucket not found';

export async function ownedBucket(ctx: AppContext, userId: string, name: string): Promise<Bucket> {
  const bucket = await ctx.repos.buckets.getByName(name);
  if (!bucket || bucket.ownerId !== userId) throw notFound(BUCKET_NOT_FOUND);
  return bucket;
}

export async function ownedAsset(ctx: AppContext, userId: string, id: string): Promise<AssetRecord> {
  const asset = await ctx.repos.assets.get(id);
  if (!asset || asset.userId !== userId) throw notFound('Asset not found');
  return asset;
}

/** The project filter of the asset list and the summary: the caller's project, else 404. */
export async function ownedProject(ctx: AppContext, userId: string, id: string): Promise<Project> {
  const project = await ctx.repos.projects.project(id);
  if (!project || project.userId !== userId) throw notFound('Project not found');
  return project;
}
