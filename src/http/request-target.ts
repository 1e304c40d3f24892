// The path of a request target: what logs, routes and the CDN read, never the query string
// (presigned and signed URLs carry their signatures there).

/** The request target without its query string. */
export function pathOf(url: string | undefined): string {
  if (url === undefined) return '';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/** The User-Agent as the request logs keep it: at most 512 characters, '' when absent. */
export function userAgentOf(req: { headers: { 'user-agent'?: string | undefined } }): string {
  const ua = req.headers['user-agent'];
  if (ua === undefined) return '';
  return ua.length > 512 ? ua.slice(0, 512) : ua;
}

/**
 * A copy of a header object to add to: `{ ...headers, name: value }` leaves V8's fast path on Node 20
 * (microseconds an answer); a for-in copy followed by assignments does not.
 */
export function headersFrom(headers: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name in headers) out[name] = headers[name] as string;
  return out;
}
