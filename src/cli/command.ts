// What every admin command is made of: its shape, what it runs with, and the two ways it ends other
// than with a plain result. The command tables are the per-area modules' (user-commands.ts,
// domain-commands.ts, ...), gathered in commands.ts; admin.ts parses, runs and prints them.
import type { Config } from '../config/schema.js';
import type { Db } from '../db/open.js';
import type { Repos } from '../db/repos/index.js';

/** A command's result, printed as usual, that still makes it exit 1 (the scrub found damage). */
export class FailedResult {
  constructor(readonly result: unknown) {}
}

/** A result with two faces: `json` printed with --json, `human` (any result, printed as usual) without. */
export class Presented {
  constructor(
    readonly json: unknown,
    readonly human: unknown,
  ) {}
}

export interface Command {
  /** Positional arguments after `<group> <action>`, by name. */
  args: readonly string[];
  /** Command-specific flags; `required` ones must be given. */
  flags: readonly string[];
  required?: readonly string[];
  summary: string;
  /** One command line that works as written (after the names it uses exist). */
  example: string;
  /**
   * May create a data directory that has no meta.db yet (and says so on stderr): setting up users
   * before the first start. Every other command refuses one, rather than leave a stray ./data behind.
   */
  initialises?: true;
  run(ctx: RunContext): unknown;  // a result, or a promise of one
}

export interface RunContext {
  config: Config;
  repos: Repos;
  /** The SQLite database under the repositories (absent on PostgreSQL), for the commands that move the metadata as a whole. */
  db?: Db;
  masterKey: Buffer;
  args: Record<string, string>;
  /** Command flags given: their values; a switch (boolean flag) reads as 'true'. */
  flags: Record<string, string | undefined>;
  /** The data directory's server as recorded: endpoint, whether it runs, its region. */
  server: () => Promise<ServerView>;
}

/** A failed operation: exit code 1, one line. */
export class AdminError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'AdminError';
  }
}

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** Where the S3 endpoint printed by a command comes from, and whether the server there runs now. */
export type EndpointStatus =
  /** --public-url (or its setting) */
  | 'configured'
  /** recorded by the server running now on this data directory */
  | 'running'
  /** recorded when the server last ran on this data directory; it is not running now */
  | 'not-running'
  /** recorded by a server on another host, or by an older version: whether it runs cannot be told from here */
  | 'unverified'
  /** no server has started on this data directory: endpoint null */
  | 'unknown';

export interface ServerView {
  endpoint: string | null;
  endpointStatus: EndpointStatus;
  /** The region to give clients and new buckets: --region if given, else the server's, else the default. */
  region: string;
}
