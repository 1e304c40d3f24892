// The projects service's refusals (src/projects/errors.ts) as API errors, for the route modules of
// projects, hostnames and a hostname's HTTPS: 400, 404 or 409 with the service's code and words.
import { ProjectError, type ProjectErrorKind } from '../../projects/errors.js';
import { ApiError } from '../errors.js';

const STATUS: Record<ProjectErrorKind, number> = { invalid: 400, not_found: 404, conflict: 409, verification_failed: 409 };

/** `fn`'s answer; a ProjectError becomes its API error, anything else is left to the error handler. */
export async function answered<T>(fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ProjectError) throw new ApiError(STATUS[err.kind], err.code, err.message);
    throw err;
  }
}
