// The disk tier's index, shared by every process serving one data directory: a small SQLite file
// (<cdn-cache>/index.db, WAL) that any of them reads and writes. It names what each cache file holds
// (entries), which bodies are being written and by whom (fills: at most one per key, so an object is
// read from storage once whatever the worker count), and which processes use the cache (procs: a fill
// of a process that died is taken over). Running totals (kept by triggers) bound the whole directory:
// the entries' bytes plus the room fills in flight reserved never exceed diskBytes.
//
// Every method is one short synchronous statement or transaction: no lock is ever held across an await.
// The index is a cache of the files' headers: a missing or unreadable index is rebuilt from them.
import { openSqlite, type Database, type Statement } from '../../db/sqlite/index.js';

/** Bumped when the schema changes: an index of another version is dropped and rebuilt from the files. */
const SCHEMA_VERSION = 1;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS entries (
  key TEXT PRIMARY KEY,
  etag TEXT NOT NULL,
  owner TEXT NOT NULL,
  size INTEGER NOT NULL,
  offset INTEGER NOT NULL,
  file TEXT NOT NULL UNIQUE,
  cached_at INTEGER NOT NULL,
  used_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_used ON entries(used_at);
CREATE INDEX IF NOT EXISTS entries_owner ON entries(owner);
CREATE TABLE IF NOT EXISTS fills (
  key TEXT PRIMARY KEY,
  etag TEXT NOT NULL,
  owner TEXT NOT NULL,
  size INTEGER NOT NULL,
  offset INTEGER NOT NULL,
  file TEXT NOT NULL UNIQUE,
  cached_at INTEGER NOT NULL,
  instance TEXT NOT NULL,
  pid INTEGER NOT NULL,
  pid_start TEXT NOT NULL,
  started_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS fills_owner ON fills(owner);
CREATE TABLE IF NOT EXISTS procs (
  instance TEXT PRIMARY KEY,
  pid INTEGER NOT NULL,
  pid_start TEXT NOT NULL,
  started_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS totals (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  entry_bytes INTEGER NOT NULL,
  entries INTEGER NOT NULL,
  fill_bytes INTEGER NOT NULL
);
INSERT OR IGNORE INTO totals (id, entry_bytes, entries, fill_bytes) VALUES (1, 0, 0, 0);
CREATE TRIGGER IF NOT EXISTS entries_added AFTER INSERT ON entries BEGIN
  UPDATE totals SET entry_bytes = entry_bytes + NEW.offset + NEW.size, entries = entries + 1 WHERE id = 1;
END;
CREATE TRIGGER IF NOT EXISTS entries_removed AFTER DELETE ON entries BEGIN
  UPDATE totals SET entry_bytes = entry_bytes - OLD.offset - OLD.size, entries = entries - 1 WHERE id = 1;
END;
CREATE TRIGGER IF NOT EXISTS fills_added AFTER INSERT ON fills BEGIN
  UPDATE totals SET fill_bytes = fill_bytes + NEW.offset + NEW.size WHERE id = 1;
END;
CREATE TRIGGER IF NOT EXISTS fills_removed AFTER DELETE ON fills BEGIN
  UPDATE totals SET fill_bytes = fill_bytes - OLD.offset - OLD.size WHERE id = 1;
END;
`;

/** A complete cache file as the index names it; `file` is relative to the cache directory. */
export interface IndexEntry {
  key: string;
  etag: string;
  owner: string;
  size: number;
  offset: number;
  file: string;
  cachedAt: number;
}

/** A body being written by some process into `file` (tmp/<random>). */
export interface IndexFill {
  key: string;
  etag: string;
  owner: string;
  size: number;
  offset: number;
  file: string;
  cachedAt: number;
  /** The tier instance writing it (one per process in production; tests run two in one). */
  instance: string;
  /** Its process: the pid and when that process started (a pid is reused; both together are not). */
  pid: number;
  pidStart: string;
  startedAt: number;
}

/** A process as the index knows it. */
export interface IndexProc {
  instance: string;
  pid: number;
  pidStart: string;
}

interface EntryRow {
  key: string;
  etag: string;
  owner: string;
  size: number;
  offset: number;
  file: string;
  cached_at: number;
}

interface FillRow extends EntryRow {
  instance: string;
  pid: number;
  pid_start: string;
  started_at: number;
}

const toEntry = (r: EntryRow): IndexEntry => ({ key: r.key, etag: r.etag, owner: r.owner, size: r.size, offset: r.offset, file: r.file, cachedAt: r.cached_at });
const toFill = (r: FillRow): IndexFill => ({ ...toEntry(r), instance: r.instance, pid: r.pid, pidStart: r.pid_start, startedAt: r.started_at });

/** What a claim decided (DiskIndex.claim). */
export type ClaimResult =
  | { kind: 'entry'; entry: IndexEntry }
  | { kind: 'follow'; fill: IndexFill }
  | { kind: 'fill'; fill: IndexFill; evicted: string[]; dropped: string[] }
  | { kind: 'full'; evicted: string[]; dropped: string[] };

export interface ClaimRequest {
  fill: IndexFill;
  maxBytes: number;
  now: number;
  /** Whether another process's fill of this key still runs (else it is taken over). */
  live(fill: IndexFill): boolean;
}

/** Files to delete once a change committed (replaced or evicted entries). */
export interface Removed {
  files: string[];
}

export class DiskIndex {
  private readonly st: {
    entry: Statement<[string], EntryRow>;
    fill: Statement<[string], FillRow>;
    fills: Statement<[], FillRow>;
    totals: Statement<[], { entry_bytes: number; entries: number; fill_bytes: number }>;
    oldest: Statement<[], EntryRow>;
    deleteEntry: Statement<[string]>;
    deleteEntryFile: Statement<[string, string]>;
    deleteFill: Statement<[string]>;
    deleteFillFile: Statement<[string, string]>;
    insertEntry: Statement<[string, string, string, number, number, string, number, number]>;
    insertFill: Statement<[string, string, string, number, number, string, number, string, number, string, number]>;
    touch: Statement<[number, string, string]>;
    byFile: Statement<[string], EntryRow>;
    byOwner: Statement<[string], EntryRow>;
    fillsByOwner: Statement<[string], FillRow>;
    from: Statement<[string], EntryRow>;
    fillsFrom: Statement<[string], FillRow>;
    allFiles: Statement<[], { key: string; file: string; offset: number; size: number }>;
    all: Statement<[], EntryRow>;
    procs: Statement<[], { instance: string; pid: number; pid_start: string }>;
    addProc: Statement<[string, number, string, number]>;
    dropProc: Statement<[string]>;
    fillsOf: Statement<[string], FillRow>;
    dropFillsOf: Statement<[string]>;
  };

  private constructor(private readonly db: Database) {
    const p = <P extends unknown[], R = unknown>(sql: string): Statement<P, R> => db.prepare<P, R>(sql);
    const cols = 'key, etag, owner, size, offset, file, cached_at';
    const fillCols = `${cols}, instance, pid, pid_start, started_at`;
    this.st = {
      entry: p(`SELECT ${cols} FROM entries WHERE key = ?`),
      fill: p(`SELECT ${fillCols} FROM fills WHERE key = ?`),
      fills: p(`SELECT ${fillCols} FROM fills`),
      totals: p('SELECT entry_bytes, entries, fill_bytes FROM totals WHERE id = 1'),
      oldest: p(`SELECT ${cols} FROM entries ORDER BY used_at LIMIT 1`),
      deleteEntry: p('DELETE FROM entries WHERE key = ?'),
      deleteEntryFile: p('DELETE FROM entries WHERE key = ? AND file = ?'),
      deleteFill: p('DELETE FROM fills WHERE key = ?'),
      deleteFillFile: p('DELETE FROM fills WHERE key = ? AND file = ?'),
      insertEntry: p('INSERT INTO entries (key, etag, owner, size, offset, file, cached_at, used_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
      insertFill: p('INSERT INTO fills (key, etag, owner, size, offset, file, cached_at, instance, pid, pid_start, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'),
      touch: p('UPDATE entries SET used_at = ? WHERE key = ? AND file = ?'),
      byFile: p(`SELECT ${cols} FROM entries WHERE file = ?`),
      byOwner: p(`SELECT ${cols} FROM entries WHERE owner = ?`),
      fillsByOwner: p(`SELECT ${fillCols} FROM fills WHERE owner = ?`),
      from: p(`SELECT ${cols} FROM entries WHERE key >= ? ORDER BY key`),
      fillsFrom: p(`SELECT ${fillCols} FROM fills WHERE key >= ? ORDER BY key`),
      allFiles: p('SELECT key, file, offset, size FROM entries'),
      all: p(`SELECT ${cols} FROM entries ORDER BY used_at`),
      procs: p('SELECT instance, pid, pid_start FROM procs'),
      addProc: p('INSERT OR REPLACE INTO procs (instance, pid, pid_start, started_at) VALUES (?, ?, ?, ?)'),
      dropProc: p('DELETE FROM procs WHERE instance = ?'),
      fillsOf: p(`SELECT ${fillCols} FROM fills WHERE instance = ?`),
      dropFillsOf: p('DELETE FROM fills WHERE instance = ?'),
    };
  }

  /**
   * Opens (creating) the index. A file that is not an index of this version is dropped by `reset`
   * (which deletes it) and created afresh: its entries come back from the files' headers.
   */
  static open(file: string, reset: () => void): DiskIndex {
    try {
      return new DiskIndex(DiskIndex.connect(file));
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (code !== 'SQLITE_CORRUPT' && code !== 'SQLITE_NOTADB' && !(err instanceof SchemaMismatch)) throw err;
      reset();
      return new DiskIndex(DiskIndex.connect(file));
    }
  }

  private static connect(file: string): Database {
    const db = openSqlite(file);
    try {
      db.pragma('busy_timeout = 5000');
      db.pragma('journal_mode = WAL');
      // NORMAL in WAL: a commit writes the WAL without an fsync, and a power loss loses at most the
      // last commits, never the index's consistency. Lost rows only make files look unindexed (the
      // next lone start adopts them); an entry is only ever served after its file's header checks out.
      db.pragma('synchronous = NORMAL');
      const create = db.transaction(() => {
        const version = db.pragma('user_version', { simple: true }) as number;
        if (version !== 0 && version !== SCHEMA_VERSION) throw new SchemaMismatch(version);
        db.exec(SCHEMA);
        if (version === 0) db.pragma(`user_version = ${SCHEMA_VERSION}`);
      });
      create.immediate();
      return db;
    } catch (err) {
      db.close();
      throw err;
    }
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  entry(key: string): IndexEntry | undefined {
    const r = this.st.entry.get(key);
    return r && toEntry(r);
  }

  fill(key: string): IndexFill | undefined {
    const r = this.st.fill.get(key);
    return r && toFill(r);
  }

  totals(): { bytes: number; entries: number; fillBytes: number } {
    const r = this.st.totals.get();
    return { bytes: r?.entry_bytes ?? 0, entries: r?.entries ?? 0, fillBytes: r?.fill_bytes ?? 0 };
  }

  /** Every entry, least recently used first (tests, purges of the whole tier). */
  entries(): IndexEntry[] {
    return this.st.all.all().map(toEntry);
  }

  /**
   * What a miss of `req.fill`'s version does, decided at once for every process: the entry if it was
   * published meanwhile; the fill to follow if another one of this version runs; else a new fill,
   * registered with its room reserved (least recently used entries evicted for it), or 'full' when the
   * fills in flight hold the room. Another version's fill is superseded (its writer will not publish),
   * a dead or stalled one taken over (`dropped`: its temp file, to delete).
   */
  claim(req: ClaimRequest): ClaimResult {
    const run = this.db.transaction((): ClaimResult => {
      const f = req.fill;
      const published = this.st.entry.get(f.key);
      if (published && published.etag === f.etag && published.size === f.size) return { kind: 'entry', entry: toEntry(published) };
      const dropped: string[] = [];
      const running = this.st.fill.get(f.key);
      if (running) {
        const other = toFill(running);
        const alive = req.live(other);
        if (alive && other.etag === f.etag && other.size === f.size) return { kind: 'follow', fill: other };
        this.st.deleteFill.run(f.key);
        // A live writer of another version deletes its own file when it finds its row gone.
        if (!alive) dropped.push(other.file);
      }
      const bytes = f.offset + f.size;
      if (bytes > req.maxBytes) return { kind: 'full', evicted: [], dropped };
      const evicted = this.evictFor(bytes, req.maxBytes);
      if (evicted === undefined) return { kind: 'full', evicted: [], dropped };
      this.st.insertFill.run(f.key, f.etag, f.owner, f.size, f.offset, f.file, f.cachedAt, f.instance, f.pid, f.pidStart, f.startedAt);
      return { kind: 'fill', fill: f, evicted, dropped };
    });
    return run.immediate();
  }

  /**
   * Evicts least recently used entries until `bytes` more fit under `maxBytes` with the entries and
   * the fills in flight; their files, or undefined when even an empty index would not make room.
   */
  private evictFor(bytes: number, maxBytes: number): string[] | undefined {
    const evicted: string[] = [];
    for (;;) {
      const t = this.totals();
      if (t.bytes + t.fillBytes + bytes <= maxBytes) return evicted;
      // The fills in flight hold the room (decided before anything is evicted: fillBytes stays put).
      if (t.fillBytes + bytes > maxBytes) return undefined;
      const oldest = this.st.oldest.get();
      if (!oldest) return undefined;
      this.st.deleteEntry.run(oldest.key);
      evicted.push(oldest.file);
    }
  }

  /**
   * A fill's file, renamed to `file`, becomes the entry for its key, if the fill is still registered
   * as this one (not purged, superseded or taken over) and `wanted` agrees. Returns the files to delete:
   * the one it replaced (and `file` itself when it is not wanted after all), or undefined when not
   * published.
   */
  publish(fill: IndexFill, file: string, usedAt: number, wanted: boolean): Removed | undefined {
    const run = this.db.transaction((): Removed | undefined => {
      const running = this.st.fill.get(fill.key);
      if (!running || running.file !== fill.file) return undefined;
      this.st.deleteFill.run(fill.key);
      if (!wanted) return undefined;
      const files: string[] = [];
      const old = this.st.entry.get(fill.key);
      if (old) {
        this.st.deleteEntry.run(fill.key);
        if (old.file !== file) files.push(old.file);
      }
      const sameFile = this.st.byFile.get(file);
      if (sameFile) this.st.deleteEntry.run(sameFile.key);
      this.st.insertEntry.run(fill.key, fill.etag, fill.owner, fill.size, fill.offset, file, fill.cachedAt, usedAt);
      return { files };
    });
    return run.immediate();
  }

  /** Forgets a fill (failed or given up) if it is still this one. */
  dropFill(key: string, file: string): void {
    this.st.deleteFillFile.run(key, file);
  }

  /** Deletes the entry of `key` (any version); its file, to delete. */
  deleteEntry(key: string): string | undefined {
    const run = this.db.transaction((): string | undefined => {
      const old = this.st.entry.get(key);
      if (old) this.st.deleteEntry.run(key);
      return old?.file;
    });
    return run.immediate();
  }

  /** Deletes the entry of `key` only if it is still `file` (a stale lookup's cleanup). */
  deleteEntryFile(key: string, file: string): boolean {
    return this.st.deleteEntryFile.run(key, file).changes > 0;
  }

  /**
   * Purges: the entries and fills of `key`, of the keys starting with `prefix`, or of `owner`. Fills
   * are dropped too, so whichever process writes them does not publish them. Returns the keys found
   * and the entries' files to delete.
   */
  purge(match: { key: string } | { prefix: string } | { owner: string }): { keys: string[]; files: string[] } {
    const run = this.db.transaction(() => {
      const keys = new Set<string>();
      const files: string[] = [];
      let entries: EntryRow[];
      let fills: FillRow[];
      if ('key' in match) {
        entries = [this.st.entry.get(match.key)].filter((r): r is EntryRow => r !== undefined);
        fills = [this.st.fill.get(match.key)].filter((r): r is FillRow => r !== undefined);
      } else if ('prefix' in match) {
        entries = takeWhilePrefix(this.st.from.iterate(match.prefix), match.prefix);
        fills = takeWhilePrefix(this.st.fillsFrom.iterate(match.prefix), match.prefix);
      } else {
        entries = this.st.byOwner.all(match.owner);
        fills = this.st.fillsByOwner.all(match.owner);
      }
      for (const e of entries) {
        this.st.deleteEntry.run(e.key);
        keys.add(e.key);
        files.push(e.file);
      }
      for (const f of fills) {
        this.st.deleteFill.run(f.key);
        keys.add(f.key);
      }
      return { keys: [...keys], files };
    });
    return run.immediate();
  }

  /** Records recent use of entries (batched by the tier): least recently used is evicted first. */
  touch(used: Iterable<[string, string]>, at: number): void {
    const run = this.db.transaction(() => {
      for (const [key, file] of used) this.st.touch.run(at, key, file);
    });
    run.immediate();
  }

  /**
   * Adds complete files found on disk (a restart's rebuild, an old layout's files) unless indexed
   * already; of two files for one key the newer stays. Returns the files to delete (the older of two,
   * those evicted to keep the bound).
   */
  adopt(found: readonly IndexEntry[], maxBytes: number): string[] {
    const run = this.db.transaction((): string[] => {
      const files: string[] = [];
      for (const e of found) {
        if (this.st.byFile.get(e.file)) continue;
        const current = this.st.entry.get(e.key);
        if (current && current.cached_at >= e.cachedAt) {
          files.push(e.file);
          continue;
        }
        if (current) {
          this.st.deleteEntry.run(e.key);
          files.push(current.file);
        }
        this.st.insertEntry.run(e.key, e.etag, e.owner, e.size, e.offset, e.file, e.cachedAt, e.cachedAt);
      }
      files.push(...this.trim(maxBytes));
      return files;
    });
    return run.immediate();
  }

  /** Evicts least recently used entries until the index and the fills fit `maxBytes` (a smaller bound). */
  trim(maxBytes: number): string[] {
    const run = this.db.transaction((): string[] => {
      const files: string[] = [];
      for (;;) {
        const t = this.totals();
        if (t.bytes + t.fillBytes <= maxBytes || t.entries === 0) return files;
        const oldest = this.st.oldest.get();
        if (!oldest) return files;
        this.st.deleteEntry.run(oldest.key);
        files.push(oldest.file);
      }
    });
    return run.immediate();
  }

  /** The files the index names, with the size each must have (a lone start's check of the directory). */
  files(): { key: string; file: string; bytes: number }[] {
    return this.st.allFiles.all().map((r) => ({ key: r.key, file: r.file, bytes: r.offset + r.size }));
  }

  /** Whether some entry names `file`. */
  names(file: string): boolean {
    return this.st.byFile.get(file) !== undefined;
  }

  fills(): IndexFill[] {
    return this.st.fills.all().map(toFill);
  }

  /**
   * Registers this tier instance and drops the registrations (and fills) of processes no longer
   * alive. Returns whether no other live process uses the cache, and the temp files of dead fills.
   */
  register(me: IndexProc, now: number, alive: (p: IndexProc) => boolean): { alone: boolean; dropped: string[] } {
    const run = this.db.transaction(() => {
      const dropped: string[] = [];
      let alone = true;
      for (const row of this.st.procs.all()) {
        const p = { instance: row.instance, pid: row.pid, pidStart: row.pid_start };
        if (p.instance === me.instance) continue;
        if (alive(p)) {
          alone = false;
          continue;
        }
        dropped.push(...this.forgetProc(p.instance));
      }
      if (alone) {
        // Nobody else runs: every fill left in the index was a dead process's.
        for (const f of this.st.fills.all()) {
          this.st.deleteFill.run(f.key);
          dropped.push(f.file);
        }
      }
      this.st.addProc.run(me.instance, me.pid, me.pidStart, now);
      return { alone, dropped };
    });
    return run.immediate();
  }

  /** Drops a process's registration and its fills; their temp files, to delete. */
  forgetProc(instance: string): string[] {
    const run = this.db.transaction(() => {
      const files = this.st.fillsOf.all(instance).map((f) => f.file);
      this.st.dropFillsOf.run(instance);
      this.st.dropProc.run(instance);
      return files;
    });
    return run.immediate();
  }

  /** Processes registered, for the periodic check of who died. */
  procs(): IndexProc[] {
    return this.st.procs.all().map((r) => ({ instance: r.instance, pid: r.pid, pidStart: r.pid_start }));
  }
}

class SchemaMismatch extends Error {
  constructor(version: number) {
    super(`cdn cache index: schema version ${version}, this build reads ${SCHEMA_VERSION}`);
  }
}

/** Rows in key order from the first key >= prefix: those starting with it are contiguous there. */
function takeWhilePrefix<R extends { key: string }>(rows: IterableIterator<R>, prefix: string): R[] {
  const out: R[] = [];
  for (const r of rows) {
    if (!r.key.startsWith(prefix)) {
      rows.return?.();
      break;
    }
    out.push(r);
  }
  return out;
}
