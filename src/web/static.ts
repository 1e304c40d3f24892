// The dashboard's files (built by scripts/build-web.mjs into dist/web): index.html at /dashboard/,
// content-hashed scripts and styles under /dashboard/assets/ (cached for a year, immutable), each
// sent brotli- or gzip-compressed when the browser accepts it. Every
// answer carries the dashboard's security headers: a CSP that runs only our own files (no inline
// script or style, no other origin), no framing, nosniff, no referrer, and where the origin is
// trustworthy a Cross-Origin-Opener-Policy.
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** dist/web, beside dist/src (this file is dist/src/web/static.js once built). */
export const WEB_ROOT = fileURLToPath(new URL('../../web/', import.meta.url));

export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS = {
  'content-security-policy': DASHBOARD_CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
} as const;

/**
 * Browsers apply Cross-Origin-Opener-Policy only to a potentially trustworthy origin (HTTPS, or a
 * loopback name); over plain HTTP to a LAN name chromium ignores it and logs an error on every page.
 */
function trustworthy(request: FastifyRequest): boolean {
  if (request.protocol === 'https') return true;
  const host = request.hostname.replace(/:\d+$/, '').toLowerCase();
  return host === 'localhost' || host.endsWith('.localhost') || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}

/** A built file's name carries its content hash (esbuild's): `app-4SX5NAVK.js`, and its `.br`/`.gz` copies. */
export const HASHED = /-[A-Z0-9]{8}\.(js|css)(\.br|\.gz)?$/;

export async function dashboardFiles(app: FastifyInstance): Promise<void> {
  if (!existsSync(WEB_ROOT)) {
    app.log.warn({ root: 'dist/web' }, 'dashboard files missing (run npm run build): /dashboard answers 404');
    return;
  }
  app.addHook('onSend', async (request, reply) => {
    void reply.headers(SECURITY_HEADERS);
    if (trustworthy(request)) void reply.header('cross-origin-opener-policy', 'same-origin');
  });
  app.get('/dashboard', async (_request, reply) => reply.redirect('/dashboard/', 302));
  await app.register(fastifyStatic, {
    root: WEB_ROOT,
    prefix: '/dashboard/',
    index: ['index.html'],
    cacheControl: false,
    // scripts/build-web.mjs writes a .br and a .gz beside every file: sent with Content-Encoding (and
    // Vary: Accept-Encoding) to browsers that accept them.
    preCompressed: true,
    etag: true,
    lastModified: false,
    setHeaders: (res, path) => {
      void res.header('cache-control', HASHED.test(path) ? 'public, max-age=31536000, immutable' : 'no-cache');
    },
  });
}
