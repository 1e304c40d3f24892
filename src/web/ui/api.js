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
  constructor(status, message, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
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
    throw new ApiError(res.status, body.message || `Request failed (${res.status})`, body.code || 'error');
  }
  return body;
}

export async function api(method, path, body) {
  const res = await fetch(path, {
    method,
    credentials: 'same-origin',
    headers: headersFor(method, body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return parse(res);
}

export const get = (path) => api('GET', path);
export const post = (path, body) => api('POST', path, body ?? {});
export const put = (path, body) => api('PUT', path, body ?? {});
export const del = (path) => api('DELETE', path);

/** Query string of the defined, non-empty values. */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

/**
 * Uploads one file as an asset. onProgress(sent, total) follows the bytes on the wire; resolves with
 * the API's answer, rejects with ApiError. abort() on the returned handle cancels it.
 */
export function uploadAsset(file, visibility, onProgress) {
  const xhr = new XMLHttpRequest();
  const done = new Promise((resolve, reject) => {
    xhr.open('POST', '/api/v3/cdn/assets');
    xhr.setRequestHeader('accept', 'application/json');
    xhr.setRequestHeader('x-csrf-token', csrfToken);
    xhr.upload.addEventListener('progress', (e) => onProgress(e.loaded, e.lengthComputable ? e.total : file.size));
    xhr.addEventListener('load', () => {
      let body = {};
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        body = { success: false, message: `The server answered ${xhr.status} without JSON` };
      }
      if (xhr.status >= 200 && xhr.status < 300 && body.success !== false) resolve(body);
      else reject(new ApiError(xhr.status, body.message || `Upload failed (${xhr.status})`, body.code || 'error'));
    });
    xhr.addEventListener('error', () => reject(new ApiError(0, 'The upload could not reach the server', 'network')));
    xhr.addEventListener('abort', () => reject(new ApiError(0, 'Upload cancelled', 'aborted')));
    const form = new FormData();
    form.append('visibility', visibility);
    form.append('file', file, file.name);
    xhr.send(form);
  });
  return { done, abort: () => xhr.abort() };
}
