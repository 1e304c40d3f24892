// The path of a request target: what logs, routes and the CDN read, never the query string
// (presigned and signed URLs carry their signatures there).

/** The request target without its query string. */
export function pathOf(url: string | undefined): string {
  if (url === undefined) return '';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}
