// What can go wrong with a project change, in words for its user; the API maps these to statuses
// (400, 404, 409) and the admin CLI to failed commands.

export type ProjectErrorKind =
  /** Bad input: the message names the field. */
  | 'invalid'
  /** No such project, deployment or hostname (or another user's: the same answer). */
  | 'not_found'
  /** The name is taken (`hostname_taken`, `project_exists`). */
  | 'conflict'
  /** The DNS check did not find the verification record. */
  | 'verification_failed';

export class ProjectError extends Error {
  override name = 'ProjectError';

  constructor(
    readonly kind: ProjectErrorKind,
    /** Machine-readable, for the API's `code`: `invalid_request`, `hostname_taken`, ... */
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function invalid(message: string): ProjectError {
  return new ProjectError('invalid', 'invalid_request', message);
}

export function notFound(what: string): ProjectError {
  return new ProjectError('not_found', 'not_found', `${what} not found`);
}
