// Errors of the management API. Every one is answered as { success: false, message, code, ...extra }.

export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    /** Extra top-level fields of the error body (402 carries requiredCredits and balance). */
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export function notFound(what = 'Not found'): ApiError {
  return new ApiError(404, 'not_found', what);
}

export function badRequest(message: string): ApiError {
  return new ApiError(400, 'invalid_request', message);
}
