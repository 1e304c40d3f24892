// The edge reverse proxy's vocabulary, shared by the projects service (which stores and validates it),
// the route table (Host -> route), the rules (route + request facts -> decision), the forwarder and the
// request log. Plain data: JSON in project_hostnames.origin / .rules (migration 012).

/** Where a project hostname's requests go. */
export type Origin =
  | {
      kind: 'url';
      /** `http(s)://host[:port]`, no path, query or credentials. */
      url: string;
      /** Send the client's Host to the origin (true), or the origin URL's host (false, the default). */
      preserveHost: boolean;
    }
  | {
      /** A bucket of this gateway, owned by the hostname's owner, served as a static site. */
      kind: 'bucket';
      bucketId: string;
      /** Appended to paths that end in `/` (`index.html`). */
      indexDocument: string;
      /** The key served with status 404 when nothing else matches; null: a bare 404. */
      errorDocument: string | null;
    };

/** Token bucket per client (IPv4 address, IPv6 /64), with bans that grow for repeat offenders. */
export interface RateLimitRule {
  /** Tokens added per second. */
  requestsPerSecond: number;
  /** Bucket size: the burst a quiet client may send at once. */
  burst: number;
  /** Refusals within banWindowSeconds after which the client is banned; 0: never banned. */
  banAfter: number;
  banWindowSeconds: number;
  /** First ban; each further ban of the same client doubles, up to maxBanSeconds. */
  banSeconds: number;
  maxBanSeconds: number;
}

/** A hostname's protection, evaluated before the origin is contacted. Empty lists mean "no rule". */
export interface HostRules {
  /** IPs and CIDRs (v4, v6): when non-empty, only these clients pass. */
  allowIps: string[];
  /** IPs and CIDRs refused (checked before allowIps). */
  blockIps: string[];
  /** ISO 3166 alpha-2 codes (GeoIP of the client address). */
  blockCountries: string[];
  /** Upper-case method names; empty: any method. */
  allowedMethods: string[];
  /** Largest request body forwarded; null: no limit. */
  maxBodyBytes: number | null;
  rateLimit: RateLimitRule | null;
}

export const NO_RULES: HostRules = { allowIps: [], blockIps: [], blockCountries: [], allowedMethods: [], maxBodyBytes: null, rateLimit: null };

/** What the proxy needs of a verified hostname to serve a request (src/edge/route.ts keeps them). */
export interface EdgeRoute {
  hostnameId: string;
  /** Lower-case ASCII, as stored. */
  hostname: string;
  projectId: string;
  ownerId: string;
  /** null: no origin set yet (the proxy answers 502). */
  origin: Origin | null;
  rules: HostRules;
  /** Its HTTPS: settings and certificate (src/certificates); null: the defaults, no certificate. */
  tls: RouteTls | null;
}

/** What serving a hostname over HTTPS needs, loaded with its route. */
export interface RouteTls {
  /** Plain HTTP answered 308 to https:// (only while a certificate is held). */
  redirectHttps: boolean;
  /** The Strict-Transport-Security value of HTTPS answers; '' for none. */
  hsts: string;
  minTls: '1.2' | '1.3';
  /** null: none yet (the handshake gets the operator's certificate, if any). */
  certificate: { pem: string; keyEnc: string; fingerprint: string; notAfter: number } | null;
}

/** Why a request was refused before the origin; the request log's `decision` column holds these or 'allowed'. */
export type BlockReason = 'ip-blocked' | 'ip-not-allowed' | 'country-blocked' | 'method-not-allowed' | 'body-too-large' | 'rate-limited' | 'banned';

export const BLOCK_REASONS: readonly BlockReason[] = ['ip-blocked', 'ip-not-allowed', 'country-blocked', 'method-not-allowed', 'body-too-large', 'rate-limited', 'banned'];

/**
 * The request log's `decision` of a proxied request refused because the hostname's owner ran out of
 * credits (credits.atZero 'suspend-delivery'): not a rule, but a refusal before the origin all the same.
 */
export const CREDITS_DEPLETED = 'credits-depleted';

export type Decision =
  | { kind: 'allow' }
  | {
      kind: 'block';
      reason: BlockReason;
      /** 403 (ip, country), 405 (method), 413 (body), 429 (rate limit, ban). */
      status: 403 | 405 | 413 | 429;
      /** For 429: whole seconds until the client may try again. */
      retryAfterSeconds?: number;
    };

/**
 * The edge cache owner of everything cached for a project hostname (its proxied answers): purged
 * together. By hostname id, not name: a name removed and added again (perhaps by another user) starts
 * with nothing cached.
 */
export function proxyCacheOwner(hostnameId: string): string {
  return `proxy:${hostnameId}`;
}
