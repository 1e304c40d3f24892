// Bucket CORS: validating a CORSConfiguration, matching rules, and the headers of preflight (OPTIONS,
// unsigned) and actual (signed, with Origin) responses. The first rule that matches wins, as on AWS.
import type { IncomingMessage } from 'node:http';
import type { AppContext } from '../context.js';
import type { CorsRule } from '../db/repos/index.js';
import { S3Error } from '../errors/s3-errors.js';
import { childNames, childValues, isNode, leafText, optionalLeaf, parseXmlDocument, type XmlNode } from './request-body-xml.js';
import type { S3Response } from './respond.js';
import type { XmlObject } from './xml.js';

export type { CorsRule };

export const MAX_CORS_RULES = 100;
const CORS_METHODS: ReadonlySet<string> = new Set(['GET', 'PUT', 'POST', 'DELETE', 'HEAD']);
const RULE_ELEMENTS: ReadonlySet<string> = new Set(['ID', 'AllowedOrigin', 'AllowedMethod', 'AllowedHeader', 'ExposeHeader', 'MaxAgeSeconds']);
const VARY = 'Origin, Access-Control-Request-Headers, Access-Control-Request-Method';

function wildcards(s: string): number {
  return s.split('*').length - 1;
}

function texts(node: XmlNode, name: string): string[] {
  return childValues(node, name).map((v) => leafText(v).trim());
}

function parseRule(node: unknown): CorsRule {
  if (!isNode(node)) throw new S3Error('MalformedXML');
  for (const name of childNames(node)) if (!RULE_ELEMENTS.has(name)) throw new S3Error('MalformedXML');
  const allowedOrigins = texts(node, 'AllowedOrigin');
  const allowedMethods = texts(node, 'AllowedMethod');
  const allowedHeaders = texts(node, 'AllowedHeader');
  const exposeHeaders = texts(node, 'ExposeHeader');
  if (allowedOrigins.length === 0 || allowedMethods.length === 0) throw new S3Error('MalformedXML');
  if ([...allowedOrigins, ...allowedMethods, ...allowedHeaders, ...exposeHeaders].some((v) => v === '')) {
    throw new S3Error('MalformedXML');
  }
  for (const m of allowedMethods) {
    if (!CORS_METHODS.has(m)) throw new S3Error('InvalidRequest', `Found unsupported HTTP method in CORS config. Unsupported method is ${m}`);
  }
  for (const o of allowedOrigins) {
    if (wildcards(o) > 1) throw new S3Error('InvalidRequest', `AllowedOrigin "${o}" can not have more than one wildcard.`);
  }
  for (const h of allowedHeaders) {
    if (wildcards(h) > 1) throw new S3Error('InvalidRequest', `AllowedHeader "${h}" can not have more than one wildcard.`);
  }
  for (const h of exposeHeaders) {
    if (h.includes('*')) throw new S3Error('InvalidRequest', `ExposeHeader "${h}" contains wildcard. We currently do not support wildcard for ExposeHeader.`);
  }
  const rule: CorsRule = { allowedOrigins, allowedMethods, allowedHeaders, exposeHeaders };
  const id = optionalLeaf(node, 'ID')?.trim();
  if (id !== undefined && id !== '') {
    if (id.length > 255) throw new S3Error('InvalidArgument', 'The ID of a CORS rule may be at most 255 characters long.');
    rule.id = id;
  }
  const maxAge = optionalLeaf(node, 'MaxAgeSeconds')?.trim();
  if (maxAge !== undefined) {
    if (!/^\d{1,10}$/.test(maxAge) || Number(maxAge) > 2 ** 31 - 1) throw new S3Error('MalformedXML');
    rule.maxAgeSeconds = Number(maxAge);
  }
  return rule;
}

/** Parses and validates a CORSConfiguration document. Pure; exported for tests. */
export function parseCorsConfiguration(body: Buffer): CorsRule[] {
  const root = parseXmlDocument(body, 'CORSConfiguration');
  for (const name of childNames(root)) if (name !== 'CORSRule') throw new S3Error('MalformedXML');
  const rules = childValues(root, 'CORSRule');
  if (rules.length === 0) throw new S3Error('MalformedXML');
  if (rules.length > MAX_CORS_RULES) {
    throw new S3Error('InvalidRequest', `The number of CORS rules should not exceed allowed limit of ${MAX_CORS_RULES} rules.`);
  }
  return rules.map(parseRule);
}

/** The rules as GetBucketCors returns them (the body of <CORSConfiguration>). */
export function corsConfigurationXml(rules: readonly CorsRule[]): XmlObject {
  return {
    CORSRule: rules.map((r) => ({
      ID: r.id,
      AllowedHeader: r.allowedHeaders,
      AllowedMethod: r.allowedMethods,
      AllowedOrigin: r.allowedOrigins,
      ExposeHeader: r.exposeHeaders,
      MaxAgeSeconds: r.maxAgeSeconds,
    })),
  };
}

/** `*` matches any run of characters (at most one per pattern, enforced on PUT). */
export function wildcardMatch(pattern: string, value: string): boolean {
  const star = pattern.indexOf('*');
  if (star < 0) return pattern === value;
  const head = pattern.slice(0, star);
  const tail = pattern.slice(star + 1);
  return value.length >= head.length + tail.length && value.startsWith(head) && value.endsWith(tail);
}

function originAllowed(rule: CorsRule, origin: string): boolean {
  return rule.allowedOrigins.some((p) => wildcardMatch(p, origin));
}

function headerAllowed(rule: CorsRule, name: string): boolean {
  return rule.allowedHeaders.some((p) => wildcardMatch(p.toLowerCase(), name));
}

/** Access-Control-Request-Headers as lower-cased names. */
export function requestedHeaders(raw: string | undefined): string[] {
  if (!raw) return [];
  return raw.split(',').map((h) => h.trim().toLowerCase()).filter(Boolean);
}

/** The first rule allowing a preflight for `origin`, `method` and every requested header. */
export function matchPreflight(rules: readonly CorsRule[], origin: string, method: string, headers: readonly string[]): CorsRule | undefined {
  return rules.find((r) => originAllowed(r, origin) && r.allowedMethods.includes(method) && headers.every((h) => headerAllowed(r, h)));
}

/** The first rule allowing an actual request of `method` from `origin` (headers were settled by the preflight). */
export function matchActual(rules: readonly CorsRule[], origin: string, method: string): CorsRule | undefined {
  return rules.find((r) => originAllowed(r, origin) && r.allowedMethods.includes(method));
}

/** The headers a matched rule grants: a wildcard-only origin is answered `*`, anything else is echoed. */
function grantHeaders(rule: CorsRule, origin: string): Record<string, string> {
  const h: Record<string, string> = {};
  if (rule.allowedOrigins.includes('*')) {
    h['access-control-allow-origin'] = '*';
  } else {
    h['access-control-allow-origin'] = origin;
    h['access-control-allow-credentials'] = 'true';
  }
  h['access-control-allow-methods'] = rule.allowedMethods.join(', ');
  if (rule.exposeHeaders.length > 0) h['access-control-expose-headers'] = rule.exposeHeaders.join(', ');
  if (rule.maxAgeSeconds !== undefined) h['access-control-max-age'] = String(rule.maxAgeSeconds);
  return h;
}

function one(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(',') : v;
}

async function rulesOf(ctx: AppContext, bucketName: string | undefined): Promise<CorsRule[] | undefined> {
  if (bucketName === undefined) return undefined;
  const bucket = await ctx.bucketDirectory.byName(bucketName);
  return bucket && ctx.repos.bucketCors.get(bucket.id);
}

/**
 * Answers an OPTIONS preflight from the bucket's rules, without authentication (browsers never sign
 * preflights). A missing bucket and a bucket without CORS look alike, so nothing leaks.
 */
export async function preflightResponse(ctx: AppContext, req: IncomingMessage, bucketName: string | undefined): Promise<S3Response> {
  const origin = one(req, 'origin');
  if (!origin) throw new S3Error('BadRequest', 'Insufficient information. Origin request header needed.');
  const method = one(req, 'access-control-request-method');
  if (!method) throw new S3Error('BadRequest', 'Invalid Access-Control-Request-Method: null');
  const rules = await rulesOf(ctx, bucketName);
  if (!rules) throw new S3Error('AccessForbidden', 'CORSResponse: CORS is not enabled for this bucket.', { Method: method });
  const requested = requestedHeaders(one(req, 'access-control-request-headers'));
  const rule = matchPreflight(rules, origin, method, requested);
  if (!rule) throw new S3Error('AccessForbidden', undefined, { Method: method }, { vary: VARY });
  const headers: Record<string, string> = { ...grantHeaders(rule, origin), vary: VARY, 'content-length': '0' };
  if (requested.length > 0) headers['access-control-allow-headers'] = requested.join(', ');
  return { status: 200, headers };
}

/**
 * CORS headers for a signed request that carries an Origin: those of the first rule matching its origin
 * and method (nothing when none matches), plus Vary whenever the bucket has rules. They are set before
 * the handler runs, so error responses carry them too and a browser can read the error.
 */
export async function actualCorsHeaders(
  ctx: AppContext,
  req: IncomingMessage,
  bucketName: string | undefined,
): Promise<Record<string, string> | undefined> {
  const origin = one(req, 'origin');
  if (!origin || bucketName === undefined) return undefined;
  const rules = await rulesOf(ctx, bucketName);
  if (!rules) return undefined;
  const rule = matchActual(rules, origin, req.method ?? 'GET');
  return { ...(rule ? grantHeaders(rule, origin) : {}), vary: VARY };
}
