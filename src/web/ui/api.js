// The dashboard's only way to the server: JSON calls to /api/v3 (and /storage, /dashboard/session)
// with the session cookie, the session's CSRF token on every state-changing call, and errors as
// ApiError carrying the server's own message. Uploads go through XMLHttpRequest for their progress.
let csrfToken = '';
let onSignedOut = () => {};

export function setSession(token, signedOut) {
  csrfToken = token;
  if (signedOut) onSignedOut = signedOut;
}

export class ApiError extends Error {
  /** `details`: the error body's other fields (a 402 carries requiredCredits and balance). */
  constructor(status, message, code, details = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

/** The ApiError of an answer's status and JSON body. */
function errorOf(status, body, fallback) {
  const { success: _s, message, code, ...details } = body;
  return new ApiError(status, message || `${fallback} (${status})`, code || 'error', details);
}

function headersFor(method, hasBody) {
  const headers = { accept: 'application/json' };
  if (hasBody) headers['content-type'] = 'application/json';
  if (method !== 'GET' && method !== 'HEAD') headers['x-csrf-token'] = csrfToken;
  return headers;
}

async function parse(res) {
  const text = await res.text();
  let body;
  try {
    body = text ? JSON.parse(text) : {};
  } catch {
    body = { success: false, message: `The server answered ${res.status} without JSON` };
  }
  if (!res.ok || body.success === false) {
    if (res.status === 401 && csrfToken) onSignedOut();
    throw errorOf(res.status, body, 'Request failed');
  }
  return body;
}

export async function api(method, path, body) {
  let res;
  try {
    res = await fetch(path, {
      method,
      credentials: 'same-origin',
      headers: headersFor(method, body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    // The browser's own words ("Failed to fetch") say nothing a user can act on.
    throw new ApiError(0, 'The server could not be reached: check your connection (or that s3edge is running) and try again.', 'network');
  }
  return parse(res);
}

const early = new Map();
/**
 * Starts a GET before the page that needs it exists (while the session is checked); that page's get()
 * of the same path takes the answer. A failed early call (signed out, say) is made again then.
 */
export function prefetch(path) {
  const call = api('GET', path);
  call.catch(() => undefined);
  early.set(path, call);
}

export function get(path) {
  const call = early.get(path);
  if (!call) return api('GET', path);
  early.delete(path);
  return call.catch(() => api('GET', path));
}
export const post = (path, body) => api('POST', path, body ?? {});
export const put = (path, body) => api('PUT', path, body ?? {});
export const patch = (path, body) => api('PATCH', path, body ?? {});
export const del = (path) => api('DELETE', path);

/** Query string of the defined, non-empty values. */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

/**
 * Uploads one file as an asset with the form `fields` (visibility, kind, projectId, deploymentId; empty
 * ones left out). onProgress(fraction) follows the request's bytes on the wire (the form
 * around the file is a few hundred bytes more than the file, so it is a share, not a byte count);
 * resolves with the API's answer, rejects with ApiError. abort() on the returned handle cancels it.
 */
export function uploadAsset(file, fields, onProgress) {
  const xhr = new XMLHttpRequest();
  const done = new Promise((resolve, reject) => {
    xhr.open('POST', '/api/v3/cdn/assets');
    xhr.setRequestHeader('accept', 'application/json');
    xhr.setRequestHeader('x-csrf-token', csrfToken);
    xhr.upload.addEventListener('progress', (e) => onProgress(e.lengthComputable && e.total ? Math.min(1, e.loaded / e.total) : 0));
    xhr.addEventListener('load', () => {
      let body = {};
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        body = { success: false, message: `The server answered ${xhr.status} without JSON` };
      }
      if (xhr.status >= 200 && xhr.status < 300 && body.success !== false) resolve(body);
      else reject(errorOf(xhr.status, body, 'Upload failed'));
    });
    xhr.addEventListener('error', () => reject(new ApiError(0, 'The upload could not reach the server: check your connection (or that s3edge is running) and try again.', 'network')));
    xhr.addEventListener('abort', () => reject(new ApiError(0, 'Upload cancelled', 'aborted')));
    const form = new FormData();
    // Fields before the file: the server reads the form in order and decides by them as the file streams.
    for (const [name, value] of Object.entries(fields)) if (value) form.append(name, value);
    form.append('file', file, file.name);
    xhr.send(form);
  });
  return { done, abort: () => xhr.abort() };
}
