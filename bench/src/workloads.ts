// Warp-like workloads against one target: PUT, GET, HEAD, DELETE, LIST and MIXED (45% GET, 30% HEAD,
// 15% PUT, 10% DELETE), N workers on one keep-alive pool, bounded by time or by a number of ops. CDN:
// unsigned GETs of one public file (s3edge's CDN listener, nginx's static file), as browsers send them.
// Every op's latency is kept (a sorted array gives p50/p99); the server's RSS is sampled meanwhile.
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { placeCdnObject, type CdnObject } from './cdn.js';
import { S3HttpClient, countOccurrences, type Reply } from './client.js';
import { CpuMeter, RssSampler } from './proc.js';
import { UNSIGNED_PAYLOAD, EMPTY_SHA256, canonicalQuery } from './sigv4.js';
import type { Target, TargetName } from './targets.js';

export type Workload = 'PUT' | 'GET' | 'HEAD' | 'DELETE' | 'LIST' | 'MIXED' | 'CDN';

/** A round ends when its time is up or its ops are issued, whichever comes first. */
export interface Bound {
  durationMs?: number;
  ops?: number;
}

export interface RoundStats {
  /** Ops that succeeded. */
  ops: number;
  errors: number;
  /** Payload bytes moved (PUT and GET bodies, LIST pages). */
  bytes: number;
  durationMs: number;
  opsPerSec: number;
  mbPerSec: number;
  p50Ms: number;
  p99Ms: number;
  rssMaxKiB: number;
  /** Cores the rest of the machine used during the round (see CpuMeter). */
  otherCpu: number;
  /**
   * The server's CPU time (its process tree, user + system) per successful op, in microseconds: what an
   * op costs the server, far less moved by other load on the machine than ops/s is.
   */
  cpuUsPerOp: number;
  firstError?: string;
}

export const KiB = 1024;
export const MiB = 1024 * KiB;
export const GiB = 1024 * MiB;

export function sizeLabel(size: number): string {
  if (size === 0) return '-';
  if (size >= GiB && size % GiB === 0) return `${size / GiB} GiB`;
  if (size >= MiB && size % MiB === 0) return `${size / MiB} MiB`;
  if (size >= KiB && size % KiB === 0) return `${size / KiB} KiB`;
  return `${size} B`;
}

function keyLabel(size: number): string {
  return sizeLabel(size).replace(' ', '').toLowerCase();
}

/** Pre-generated bodies, one per size, with their SHA-256 (the signed payload hash). */
export class Bodies {
  private readonly bodies = new Map<number, { buf: Buffer; sha256: string }>();

  get(size: number): { buf: Buffer; sha256: string } {
    let b = this.bodies.get(size);
    if (!b) {
      const buf = randomBytes(size);
      b = { buf, sha256: createHash('sha256').update(buf).digest('hex') };
      this.bodies.set(size, b);
    }
    return b;
  }
}

interface Outcome {
  ok: boolean;
  bytes: number;
  error?: string;
}

type Op = () => Promise<Outcome>;

function describe(method: string, key: string, r: Reply, want: string): string {
  const body = r.body ? r.body.subarray(0, 300).toString('utf8').replace(/\s+/g, ' ') : '';
  return `${method} ${key}: ${r.status} (want ${want}) ${body}`.trim();
}

export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] ?? 0;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

export const BUCKET = 'bench';
export const LIST_BUCKET = 'benchlist';

export function listKey(i: number): string {
  return `k/${String(i).padStart(7, '0')}`;
}

/** One target's client and the keys it holds, kept across cells and rounds. */
export class TargetRunner {
  readonly client: S3HttpClient;
  private seq = 0;
  /** Objects GET/HEAD read, per size (never deleted). */
  private readonly readable = new Map<number, string[]>();
  /** 4 KiB objects written by PUT rounds, consumed by DELETE rounds. */
  private readonly deletable = new Map<number, string[]>();
  /** Objects the MIXED workload may delete (oldest first). */
  private readonly mixQueue = new Map<number, string[]>();
  /** Large objects written by the current PUT round, removed (untimed) after it. */
  private readonly toClean: string[] = [];
  listCount = 0;
  listPage = 1000;
  /** The CDN workload's client (its own pool: s3edge's CDN has its own listener) and objects by size. */
  private cdnClient: S3HttpClient | undefined;
  private readonly cdnObjects = new Map<number, CdnObject>();

  constructor(
    readonly target: Target,
    private readonly bodies: Bodies,
    private readonly maxConnections: number,
  ) {
    this.client = new S3HttpClient(target.url, target.credentials, maxConnections);
  }

  get name(): TargetName {
    return this.target.name;
  }

  async createBuckets(): Promise<void> {
    if (this.target.kind !== 's3') return;
    for (const b of [BUCKET, LIST_BUCKET]) {
      const r = await this.client.send('PUT', { path: `/${b}`, payloadHash: EMPTY_SHA256 });
      if (r.status !== 200) throw new Error(`${this.name}: cannot create bucket ${b}: ${describe('PUT', b, r, '200')}`);
    }
  }

  private newKey(prefix: string, size: number): string {
    return `${prefix}/${keyLabel(size)}/${(this.seq++).toString(36)}`;
  }

  private async put(bucket: string, key: string, size: number): Promise<Outcome> {
    const body = this.bodies.get(size);
    const r = await this.client.send('PUT', { path: `/${bucket}/${key}`, body: body.buf, payloadHash: body.sha256 });
    return r.status === 200 ? { ok: true, bytes: size } : { ok: false, bytes: 0, error: describe('PUT', key, r, '200') };
  }

  private async get(key: string, size: number): Promise<Outcome> {
    const r = await this.client.send('GET', { path: `/${BUCKET}/${key}`, payloadHash: EMPTY_SHA256 });
    if (r.status === 200 && r.bytes === size) return { ok: true, bytes: r.bytes };
    return { ok: false, bytes: 0, error: describe('GET', key, r, `200 and ${size} bytes, got ${r.bytes}`) };
  }

  private async head(key: string): Promise<Outcome> {
    const r = await this.client.send('HEAD', { path: `/${BUCKET}/${key}`, payloadHash: EMPTY_SHA256 });
    return r.status === 200 ? { ok: true, bytes: 0 } : { ok: false, bytes: 0, error: describe('HEAD', key, r, '200') };
  }

  private async del(key: string): Promise<Outcome> {
    const r = await this.client.send('DELETE', { path: `/${BUCKET}/${key}`, payloadHash: EMPTY_SHA256 });
    return r.status === 204 || r.status === 200 ? { ok: true, bytes: 0 } : { ok: false, bytes: 0, error: describe('DELETE', key, r, '204') };
  }

  private async list(): Promise<Outcome> {
    const span = Math.max(1, this.listCount - this.listPage);
    const after = listKey(Math.floor(Math.random() * span));
    const query = canonicalQuery({ 'list-type': '2', 'max-keys': String(this.listPage), 'start-after': after });
    const r = await this.client.send('GET', { path: `/${LIST_BUCKET}`, query, payloadHash: EMPTY_SHA256, keepBody: true });
    const keys = r.body ? countOccurrences(r.body, '<Key>') : 0;
    if (r.status === 200 && keys === this.listPage) return { ok: true, bytes: r.bytes };
    return { ok: false, bytes: 0, error: describe('LIST', after, r, `200 and ${this.listPage} keys, got ${keys}`) };
  }

  private async cdnGet(size: number): Promise<Outcome> {
    const o = this.cdnObjects.get(size);
    if (!o || !this.cdnClient) throw new Error(`${this.name}: no CDN object of ${sizeLabel(size)}`);
    const r = await this.cdnClient.get(o.path, o.host);
    if (r.status === 200 && r.bytes === size) return { ok: true, bytes: r.bytes };
    return { ok: false, bytes: 0, error: describe('CDN GET', o.path, r, `200 and ${size} bytes, got ${r.bytes}`) };
  }

  /** The file the CDN workload reads, placed once per size (untimed). */
  async ensureCdnObject(size: number): Promise<void> {
    if (this.cdnObjects.has(size)) return;
    if (!this.target.cdnUrl) throw new Error(`${this.name} has no CDN`);
    this.cdnClient ??= new S3HttpClient(this.target.cdnUrl, this.target.credentials, this.maxConnections);
    this.cdnObjects.set(size, await placeCdnObject(this.target, this.bodies.get(size).buf));
  }

  /** Where the CDN file of `size` is (after ensureCdnObject). */
  cdnObject(size: number): CdnObject {
    const o = this.cdnObjects.get(size);
    if (!o) throw new Error(`${this.name}: no CDN object of ${sizeLabel(size)}`);
    return o;
  }

  /** The objects GET reads of `size` (after ensureReadable): keys in BUCKET. */
  readableKeys(size: number): readonly string[] {
    const keys = this.readable.get(size);
    if (!keys || keys.length === 0) throw new Error(`${this.name}: no objects of ${sizeLabel(size)} loaded`);
    return keys;
  }

  private pick(size: number): string {
    const keys = this.readable.get(size);
    if (!keys || keys.length === 0) throw new Error(`${this.name}: no objects of ${sizeLabel(size)} loaded`);
    return keys[Math.floor(Math.random() * keys.length)] ?? keys[0]!;
  }

  /** The next op of a workload, or null when there is nothing left to do (DELETE ran out of keys). */
  nextOp(workload: Workload, size: number): Op | null {
    switch (workload) {
      case 'PUT': {
        const key = this.newKey('put', size);
        return async () => {
          const o = await this.put(BUCKET, key, size);
          if (o.ok) {
            if (size <= 64 * KiB) push(this.deletable, size, key);
            else this.toClean.push(key);
          }
          return o;
        };
      }
      case 'GET': {
        const key = this.pick(size);
        return () => this.get(key, size);
      }
      case 'HEAD': {
        const key = this.pick(size);
        return () => this.head(key);
      }
      case 'DELETE': {
        const key = this.deletable.get(size)?.pop();
        if (key === undefined) return null;
        return () => this.del(key);
      }
      case 'LIST':
        return () => this.list();
      case 'CDN':
        return () => this.cdnGet(size);
      case 'MIXED': {
        const r = Math.random();
        if (r < 0.45) {
          const key = this.pick(size);
          return () => this.get(key, size);
        }
        if (r < 0.75) {
          const key = this.pick(size);
          return () => this.head(key);
        }
        const queue = this.mixQueue.get(size);
        if (r < 0.9 || !queue || queue.length === 0) {
          const key = this.newKey('mix', size);
          return async () => {
            const o = await this.put(BUCKET, key, size);
            if (o.ok) push(this.mixQueue, size, key);
            return o;
          };
        }
        const key = queue.shift()!;
        return () => this.del(key);
      }
    }
  }

  /** Objects for GET/HEAD (and nginx's files, written straight to its root). */
  async ensureReadable(size: number, count: number): Promise<void> {
    const have = this.readable.get(size)?.length ?? 0;
    if (have >= count) return;
    const keys: string[] = [];
    for (let i = 0; i < count; i++) keys.push(`get/${keyLabel(size)}/${i}`);
    if (this.target.kind === 'nginx') {
      const www = this.target.wwwDir!;
      const body = this.bodies.get(size).buf;
      for (const key of keys) {
        const file = join(www, BUCKET, key);
        await mkdir(dirname(file), { recursive: true });
        await writeFile(file, body);
      }
    } else {
      await this.forEach(keys, Math.min(16, count), (key) => this.put(BUCKET, key, size));
    }
    this.readable.set(size, keys);
  }

  async ensureMixQueue(size: number, count: number): Promise<void> {
    const have = this.mixQueue.get(size)?.length ?? 0;
    if (have >= count) return;
    const keys: string[] = [];
    for (let i = have; i < count; i++) keys.push(this.newKey('mix', size));
    await this.forEach(keys, 16, (key) => this.put(BUCKET, key, size));
    for (const k of keys) push(this.mixQueue, size, k);
  }

  /** LIST: `count` objects of 1 byte under k/0000000.., written by concurrent PUTs. */
  async ensureListObjects(count: number, page: number, concurrency: number, progress?: (done: number) => void): Promise<void> {
    this.listPage = page;
    if (this.listCount >= count) return;
    const keys: string[] = [];
    for (let i = this.listCount; i < count; i++) keys.push(listKey(i));
    let done = 0;
    await this.forEach(keys, concurrency, async (key) => {
      const o = await this.put(LIST_BUCKET, key, 1);
      if (++done % 5000 === 0) progress?.(done);
      return o;
    });
    this.listCount = count;
  }

  /** Delete the large objects the last PUT round wrote (untimed, between rounds; failures retried once, then left). */
  async cleanUp(): Promise<number> {
    const keys = this.toClean.splice(0);
    if (keys.length === 0) return 0;
    const failed: string[] = [];
    await this.forEach(keys, 8, async (key) => {
      const o = await this.del(key);
      if (!o.ok) failed.push(key);
      return { ok: true, bytes: 0 };
    });
    let left = 0;
    for (const key of failed) if (!(await this.del(key).catch(() => ({ ok: false }))).ok) left++;
    return left;
  }

  deletableCount(size: number): number {
    return this.deletable.get(size)?.length ?? 0;
  }

  /** Top up the objects DELETE rounds consume (untimed, 16 concurrent PUTs). */
  async ensureDeletable(size: number, count: number): Promise<void> {
    const have = this.deletableCount(size);
    if (have >= count) return;
    const keys: string[] = [];
    for (let i = have; i < count; i++) keys.push(this.newKey('put', size));
    await this.forEach(keys, 16, (key) => this.put(BUCKET, key, size));
    for (const k of keys) push(this.deletable, size, k);
  }

  private async forEach(keys: readonly string[], concurrency: number, fn: (key: string) => Promise<Outcome>): Promise<void> {
    let next = 0;
    let failure: string | undefined;
    const worker = async (): Promise<void> => {
      while (next < keys.length && failure === undefined) {
        const key = keys[next++]!;
        let o: Outcome;
        try {
          o = await fn(key);
        } catch (err) {
          o = { ok: false, bytes: 0, error: `${key}: ${(err as Error).message}` };
        }
        if (!o.ok) failure = o.error ?? `${key} failed`;
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    if (failure !== undefined) throw new Error(`${this.name}: preparing objects failed: ${failure}`);
  }

  /** One round: `concurrency` workers issue ops until the bound; latencies and RSS recorded. */
  async round(workload: Workload, size: number, concurrency: number, bound: Bound, cpu?: CpuMeter): Promise<RoundStats> {
    const cpuStart = cpu?.snapshot();
    const serverCpuStart = CpuMeter.treeSeconds(this.target.pid);
    const sampler = new RssSampler(this.target.pid).start();
    const latencies: number[] = [];
    let ok = 0;
    let errors = 0;
    let bytes = 0;
    let firstError: string | undefined;
    let issued = 0;
    let exhausted = false;
    const t0 = performance.now();
    const deadline = bound.durationMs !== undefined ? t0 + bound.durationMs : Infinity;
    const maxOps = bound.ops ?? Infinity;
    const worker = async (): Promise<void> => {
      while (!exhausted && issued < maxOps && performance.now() < deadline) {
        const op = this.nextOp(workload, size);
        if (!op) {
          exhausted = true;
          break;
        }
        issued++;
        const s = performance.now();
        try {
          const o = await op();
          if (o.ok) {
            ok++;
            bytes += o.bytes;
          } else {
            errors++;
            firstError ??= o.error;
          }
        } catch (err) {
          errors++;
          firstError ??= `${workload}: ${(err as Error).message}`;
        }
        latencies.push(performance.now() - s);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    const durationMs = performance.now() - t0;
    const rssMaxKiB = sampler.stop();
    const otherCpu = cpu && cpuStart ? cpu.otherCores(cpuStart) : 0;
    const serverCpu = CpuMeter.treeSeconds(this.target.pid) - serverCpuStart;
    const sorted = Float64Array.from(latencies).sort();
    const secs = durationMs / 1000;
    return {
      ops: ok,
      errors,
      bytes,
      durationMs,
      opsPerSec: secs > 0 ? ok / secs : 0,
      mbPerSec: secs > 0 ? bytes / 1e6 / secs : 0,
      p50Ms: percentile(sorted, 50),
      p99Ms: percentile(sorted, 99),
      rssMaxKiB,
      otherCpu,
      cpuUsPerOp: ok > 0 ? (serverCpu * 1e6) / ok : 0,
      ...(firstError !== undefined ? { firstError } : {}),
    };
  }

  async close(): Promise<void> {
    await this.cdnClient?.close();
    await this.client.close();
  }
}

function push(map: Map<number, string[]>, size: number, key: string): void {
  let a = map.get(size);
  if (!a) {
    a = [];
    map.set(size, a);
  }
  a.push(key);
}

export interface IdleResult {
  requested: number;
  connected: number;
  baselineKiB: number;
  rssMaxKiB: number;
  errors: number;
}

/** Open `count` keep-alive connections (one signed HEAD bucket each), leave them idle, sample RSS. */
export async function idleConnections(target: Target, count: number, holdMs: number): Promise<IdleResult> {
  const baseline = new RssSampler(target.pid).sample();
  const client = new S3HttpClient(target.url, target.credentials, count);
  try {
    let errors = 0;
    await Promise.all(
      Array.from({ length: count }, async () => {
        try {
          const r = await client.send('HEAD', { path: `/${BUCKET}`, payloadHash: EMPTY_SHA256 });
          if (r.status !== 200) errors++;
        } catch {
          errors++;
        }
      }),
    );
    const connected = client.connected();
    const sampler = new RssSampler(target.pid).start();
    await new Promise((resolve) => setTimeout(resolve, holdMs));
    const rssMaxKiB = sampler.stop();
    return { requested: count, connected: Math.min(connected, client.connected()), baselineKiB: baseline, rssMaxKiB, errors };
  } finally {
    await client.close();
  }
}

export interface StreamResult {
  bytes: number;
  ok: boolean;
  status: number;
  durationMs: number;
  mbPerSec: number;
  baselineKiB: number;
  rssMaxKiB: number;
  error?: string;
}

/** One PUT of `total` bytes generated as a stream (the same 1 MiB block repeated), UNSIGNED-PAYLOAD. */
export async function streamedUpload(target: Target, total: number, key: string): Promise<StreamResult> {
  const block = randomBytes(MiB);
  async function* generate(): AsyncGenerator<Buffer> {
    let left = total;
    while (left > 0) {
      const n = Math.min(left, block.length);
      yield n === block.length ? block : block.subarray(0, n);
      left -= n;
    }
  }
  const client = new S3HttpClient(target.url, target.credentials, 1);
  const baselineKiB = new RssSampler(target.pid).sample();
  const sampler = new RssSampler(target.pid).start();
  const t0 = performance.now();
  try {
    const r = await client.send('PUT', {
      path: `/${BUCKET}/${key}`,
      body: Readable.from(generate(), { objectMode: false }),
      contentLength: total,
      payloadHash: UNSIGNED_PAYLOAD,
    });
    const durationMs = performance.now() - t0;
    const ok = r.status === 200;
    return {
      bytes: total,
      ok,
      status: r.status,
      durationMs,
      mbPerSec: total / 1e6 / (durationMs / 1000),
      baselineKiB,
      rssMaxKiB: sampler.stop(),
      ...(ok ? {} : { error: describe('PUT', key, r, '200') }),
    };
  } catch (err) {
    return { bytes: total, ok: false, status: 0, durationMs: performance.now() - t0, mbPerSec: 0, baselineKiB, rssMaxKiB: sampler.stop(), error: (err as Error).message };
  } finally {
    await client.send('DELETE', { path: `/${BUCKET}/${key}`, payloadHash: EMPTY_SHA256 }).catch(() => undefined);
    await client.close();
  }
}
