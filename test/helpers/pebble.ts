// Debian's pebble (Let's Encrypt's test CA, 2.4.0) for one test file: a real ACME (RFC 8555) server on
// loopback that really validates (HTTP-01, TLS-ALPN-01, DNS-01) and issues from a root it makes at start.
//
// What pebble needs, and what it does:
// - A JSON config (written here): listenAddress (the ACME API, HTTPS) and managementListenAddress (its
//   /roots/0, /intermediates/0, /cert-status-by-serial/<hex> over HTTPS) on 127.0.0.1, on ports probed
//   free here: pebble cannot bind port 0 and report it. A port taken meanwhile makes it exit 1
//   ("bind: address already in use", the management listener possibly after the ACME one is up): the
//   start is retried on new ports. certificate/privateKey: its listeners' certificate, made with openssl
//   (tls.ts; SAN IP:127.0.0.1); both listeners present it, and it is `caFile`, what an ACME client must
//   trust. It is NOT the root of the certificates pebble issues: that one is new on every start (rootPem()).
// - httpPort: the port its VA dials for HTTP-01 at every address of the name (pebble does not use 80
//   unless told). tlsPort the same for TLS-ALPN-01 (0 when not given: such validations fail).
//   certificateValidityPeriod, in seconds (pebble 2.4.0 reads it; the default is 5 years): notAfter is
//   notBefore + period - 1 s (60 gives a certificate of 59 s).
// - `-dnsserver 127.0.0.1:PORT`: its VA resolves the names it validates there (UDP, no system resolver,
//   no /etc/hosts). For HTTP-01 and TLS-ALPN-01 it asks AAAA, then A, and dials the first address,
//   so an AAAA record wins over an A record (seen: an AAAA ::1 record made it dial [::1]). The rcode of
//   those answers is ignored: NXDOMAIN and SERVFAIL both read "could not resolve URL ...". No CAA
//   question. DNS-01 asks TXT at _acme-challenge.<name>, where a non-NOERROR rcode is an error.
// - Env: PEBBLE_VA_NOSLEEP=1 (otherwise seconds of random sleep before each validation attempt),
//   PEBBLE_WFE_NONCEREJECT=0 (otherwise 5% of good nonces are refused as badNonce, which a client must
//   retry), PEBBLE_AUTHZREUSE=0 by default (otherwise a valid authorization is reused for a new order
//   50% of the time, at random, so a renewal may or may not be validated again). Every other PEBBLE_*
//   variable of the test's environment is dropped; PEBBLE_VA_ALWAYS_VALID is never set: validation
//   really happens.
// Surprises:
// - Each challenge is validated by 3 concurrent attempts (pebble's concurrentValidations): the challenge
//   server is hit 3 times and DNS asked 3 x (AAAA + A) per HTTP-01 challenge; any attempt failing fails it.
// - The HTTP-01 request is `GET /.well-known/acme-challenge/<token>` with `Host: <name>:<httpPort>` (the
//   port included), `User-Agent: LetsEncrypt-Pebble-VA (linux; amd64)`, `Accept: */*`,
//   `Accept-Encoding: gzip`, `Connection: close`; the body is compared with trailing \r\n\t trimmed (by
//   its source: redirects followed, https ones unchecked; 15 s timeout).
// - Its errors (the challenge's, copied to the order's `error`; acme-client's Error message is the detail):
//   nothing listening: type urn:ietf:params:acme:error:connection, `Get "http://<name>:<port>/.well-known/
//   acme-challenge/<token>": dial tcp <ip>:<port>: connect: connection refused`; no address: the same type,
//   `Get "...": could not resolve URL "..."`; a 404: unauthorized, `Non-200 status code from HTTP: <url>
//   returned 404`; a wrong body: unauthorized, `The key authorization file from the server did not match
//   this challenge "<expected>" != "<body>"`.
// - The challenges of an authorization come in a random order (http-01, tls-alpn-01, dns-01).
// - acme-client's auto() first checks the challenge itself (verifyChallenge: system DNS, port 80) unless
//   `skipChallengeVerification: true`, and polls with backoffMin 5 s unless told lower: both matter
//   against a loopback CA.
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { get as httpsGet } from 'node:https';
import { createServer, type Server } from 'node:net';
import { delimiter, join } from 'node:path';
import { onTestProcessExit } from './exit-cleanup.js';
import { generateSelfSignedCert } from './tls.js';
import { OutputTail } from './output-tail.js';

interface Teardown {
  teardown(fn: () => void | Promise<void>): void;
}

export interface PebbleOptions {
  /** A directory of the caller's (a temp dir it removes); pebble's config and listener cert go in a new subdirectory. */
  dir: string;
  /** The port pebble's HTTP-01 validation dials at the name's address: the server's plain HTTP listener. */
  httpPort: number;
  /** The port TLS-ALPN-01 validation dials; without it such validations fail (port 0). */
  tlsPort?: number;
  /** `127.0.0.1:PORT`: where pebble resolves the names it validates (test/helpers/dns-fixture.ts). */
  dnsServer: string;
  /** Lifetime of the certificates it issues, in seconds (short ones for renewal tests). Default: pebble's 5 years. */
  certificateValiditySeconds?: number;
  /** PEBBLE_AUTHZREUSE: how often (%) a valid authorization is reused for a new order. Default 0: every order is validated. */
  authzReusePercent?: number;
  /** When given, close() runs in its teardown. */
  t?: Teardown;
}

export interface RunningPebble {
  /** https://127.0.0.1:<port>/dir */
  directoryUrl: string;
  /** https://127.0.0.1:<port>: roots/0, intermediates/0, cert-status-by-serial/<hex>. */
  managementUrl: string;
  /** The PEM that pebble's ACME (and management) listener presents: what an ACME client must trust. */
  caFile: string;
  /** The root of the certificates pebble issues (new on every start). */
  rootPem(): Promise<string>;
  /** The intermediate that signs them. */
  intermediatePem(): Promise<string>;
  /** Its output so far (stdout and stderr), for failure messages. */
  log(): string;
  /** Stops it (idempotent). */
  close(): Promise<void>;
}

const START_TIMEOUT_MS = 20_000;
const LOG_LIMIT = 1 << 20;
export const PEBBLE_MISSING = 'pebble is not installed: sudo apt-get install -y pebble (.ci/run installs it)';

/** pebble on PATH (Debian's is /usr/bin/pebble); undefined when it is not there. */
export function pebbleBinary(path = process.env.PATH ?? ''): string | undefined {
  for (const dir of path.split(delimiter).filter(Boolean)) {
    const file = join(dir, 'pebble');
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

const live = new Set<ChildProcess>();
let hooked = false;

/** `count` distinct free loopback ports, held together while probed so they differ, then released. */
async function freePorts(count: number, avoid: readonly number[]): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    while (ports.length < count) {
      const s = createServer();
      servers.push(s);
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen(0, '127.0.0.1', resolve);
      });
      const address = s.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      if (port !== 0 && !avoid.includes(port)) ports.push(port);
    }
    return ports;
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }
}

/** GET over HTTPS trusting `ca`: status and body. */
function fetchText(url: string, ca: string, timeoutMs = 5_000): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsGet(url, { ca, timeout: timeoutMs, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

export async function startPebble(opts: PebbleOptions): Promise<RunningPebble> {
  const binary = pebbleBinary();
  if (binary === undefined) throw new Error(PEBBLE_MISSING);
  if (!hooked) {
    hooked = true;
    onTestProcessExit(() => {
      for (const child of live) child.kill('SIGKILL');
    });
  }
  const dir = mkdtempSync(join(opts.dir, 'pebble-'));
  const tls = await generateSelfSignedCert(dir);
  const ca = readFileSync(tls.caFile, 'utf8');

  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('PEBBLE_')) env[k] = v;
  env.PEBBLE_VA_NOSLEEP = '1';
  env.PEBBLE_WFE_NONCEREJECT = '0';
  env.PEBBLE_AUTHZREUSE = String(opts.authzReusePercent ?? 0);

  const output = new OutputTail(LOG_LIMIT);
  // What the attempt under way printed (a port taken meanwhile is worth another try); not kept once started.
  let attemptOutput: string | undefined = '';
  const append = (d: Buffer): void => {
    const text = d.toString('utf8');
    output.add(text);
    if (attemptOutput !== undefined) attemptOutput += text;
  };

  const launch = (acmePort: number, mgmtPort: number): ChildProcess => {
    const configFile = join(dir, 'pebble-config.json');
    const pebble: Record<string, unknown> = {
      listenAddress: `127.0.0.1:${acmePort}`,
      managementListenAddress: `127.0.0.1:${mgmtPort}`,
      certificate: tls.certFile,
      privateKey: tls.keyFile,
      httpPort: opts.httpPort,
      tlsPort: opts.tlsPort ?? 0,
      ocspResponderURL: '',
      externalAccountBindingRequired: false,
    };
    if (opts.certificateValiditySeconds !== undefined) pebble.certificateValidityPeriod = opts.certificateValiditySeconds;
    writeFileSync(configFile, `${JSON.stringify({ pebble }, null, 2)}\n`);
    const child = spawn(binary, ['-config', configFile, '-dnsserver', opts.dnsServer, '-strict=false'], {
      cwd: dir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    live.add(child);
    child.once('exit', () => live.delete(child));
    child.stdout?.on('data', append);
    child.stderr?.on('data', append);
    return child;
  };

  /** true once both listeners answer; else why not. */
  const untilReady = async (child: ChildProcess, directoryUrl: string, managementUrl: string): Promise<true | string> => {
    const deadline = Date.now() + START_TIMEOUT_MS;
    let last = '';
    while (Date.now() < deadline) {
      if (child.exitCode !== null || child.signalCode !== null) return `pebble exited (${String(child.exitCode ?? child.signalCode)})`;
      try {
        // The management listener may fail to bind after the ACME one is up: both must answer.
        const dirRes = await fetchText(directoryUrl, ca, 2_000);
        const rootRes = await fetchText(`${managementUrl}/roots/0`, ca, 2_000);
        if (dirRes.status === 200 && dirRes.body.includes('newOrder') && rootRes.status === 200 && rootRes.body.includes('BEGIN CERTIFICATE')) {
          // A port taken by another process makes pebble exit a moment after that process answered.
          await new Promise((resolve) => setTimeout(resolve, 50));
          if (child.exitCode === null && child.signalCode === null) return true;
        }
        last = `answers ${dirRes.status} and ${rootRes.status}`;
      } catch (err) {
        last = (err as Error).message;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return `no answer within ${START_TIMEOUT_MS} ms (${last})`;
  };

  const stopChild = async (child: ChildProcess): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };

  let started: { child: ChildProcess; directoryUrl: string; managementUrl: string } | undefined;
  const failures: string[] = [];
  for (let attempt = 0; attempt < 3 && started === undefined; attempt++) {
    const [acmePort, mgmtPort] = (await freePorts(2, [opts.httpPort, opts.tlsPort ?? 0])) as [number, number];
    const directoryUrl = `https://127.0.0.1:${acmePort}/dir`;
    const managementUrl = `https://127.0.0.1:${mgmtPort}`;
    attemptOutput = '';
    const child = launch(acmePort, mgmtPort);
    const ready = await untilReady(child, directoryUrl, managementUrl);
    if (ready === true) started = { child, directoryUrl, managementUrl };
    else {
      failures.push(ready);
      await stopChild(child);
      // Only a port taken meanwhile is worth another try (a bad config fails the same way again).
      if (!attemptOutput.includes('address already in use')) break;
    }
  }
  attemptOutput = undefined;
  if (started === undefined) throw new Error(`pebble did not start: ${failures.join('; ')}\n${output.text().slice(-4096)}`);
  const { child, directoryUrl, managementUrl } = started;

  const pem = async (path: string): Promise<string> => {
    const res = await fetchText(`${managementUrl}${path}`, ca);
    if (res.status !== 200) throw new Error(`pebble ${path} answered ${res.status}: ${res.body}`);
    return res.body;
  };
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => (closed ??= stopChild(child));
  opts.t?.teardown(close);
  return {
    directoryUrl,
    managementUrl,
    caFile: tls.caFile,
    rootPem: () => pem('/roots/0'),
    intermediatePem: () => pem('/intermediates/0'),
    log: () => output.text(),
    close,
  };
}
