// Admin commands of the metadata store itself: `metadata copy` moves a data directory's SQLite metadata
// into an empty PostgreSQL database (src/db/pg/copy.ts), the way onto PostgreSQL (docs/SCALE.md, part 2).
// The database URL holds a password: it is printed redacted, and may come from the `metadata` setting
// (S3EDGE_METADATA_FILE) rather than the command line, where other users of the machine could read it.
import { isRunning } from '../server-record.js';
import { copySqliteToPostgres, CopyRefusedError } from '../db/pg/copy.js';
import { SchemaTooNewError } from '../db/pg/migrate.js';
import { createPgPool } from '../db/pg/pool.js';
import { isPostgresUrl, redactUrl } from '../db/pg/url.js';
import { AdminError, type Command } from './command.js';

/** The flags these commands take, with the placeholder their synopsis shows. */
export const METADATA_FLAGS: Readonly<Record<string, { type: 'string'; value: string }>> = {
  to: { type: 'string', value: 'postgres://USER:PASSWORD@HOST:PORT/DB' },
};

export const METADATA_GROUPS: Readonly<Record<string, { section: string; summary: string }>> = {
  metadata: { section: 'Storage', summary: "the metadata store: copy this data directory's SQLite metadata into PostgreSQL" },
};

/** A driver's message never quotes the password, as far as known: made sure of here. */
function withoutPassword(message: string, url: string): string {
  let password = '';
  try {
    password = decodeURIComponent(new URL(url).password);
  } catch {
    /* not a URL: nothing to find */
  }
  return password === '' ? message : message.split(password).join('***');
}

export const METADATA_COMMANDS: Record<string, Record<string, Command>> = {
  metadata: {
    copy: {
      args: [],
      flags: ['to'],
      summary:
        "copy the data directory's metadata (meta.db) into an empty PostgreSQL database, in one transaction, with its schema; " +
        'refused while the server runs or when the database holds metadata. Without --to: the metadata setting (S3EDGE_METADATA_FILE keeps the password off the command line)',
      example: 's3edge metadata copy --to postgres://s3edge@db.internal:5432/s3edge --data-dir /var/lib/s3edge',
      run: async ({ config, repos, db, flags }) => {
        // admin.ts opens the data directory's meta.db for this group, whatever the metadata setting.
        if (!db) throw new AdminError('NoSqlite', "metadata copy reads this data directory's meta.db");
        const url = flags.to ?? (isPostgresUrl(config.metadata) ? config.metadata : undefined);
        if (url === undefined) {
          throw new AdminError('MissingTarget', 'name the PostgreSQL database: --to postgres://USER:PASSWORD@HOST:PORT/DB, or the metadata setting (S3EDGE_METADATA or S3EDGE_METADATA_FILE)');
        }
        if (!isPostgresUrl(url)) throw new AdminError('InvalidTarget', `--to must be a postgres:// or postgresql:// URL (got ${redactUrl(url)})`);
        // A server writing on meanwhile would lose those writes to the copy.
        const recorded = await repos.settings.serverEndpoints();
        if (recorded !== undefined && isRunning(recorded) === true) {
          throw new AdminError('ServerRunning', `the server on this data directory is running (pid ${String(recorded.pid)}): stop it first, then copy`);
        }
        const pool = createPgPool(url, { max: 2 });
        try {
          const result = await copySqliteToPostgres(db, pool);
          return {
            to: redactUrl(url),
            schemaVersion: result.schemaVersion,
            rows: result.tables.reduce((sum, t) => sum + t.rows, 0),
            tables: Object.fromEntries(result.tables.map((t) => [t.table, t.rows])),
          };
        } catch (err) {
          if (err instanceof CopyRefusedError) throw new AdminError('TargetNotEmpty', `${err.message}; nothing was copied`);
          if (err instanceof SchemaTooNewError) throw new AdminError('SchemaTooNew', err.message);
          if (err instanceof AdminError) throw err;
          throw new AdminError('CopyFailed', `copy into ${redactUrl(url)} failed, nothing was copied: ${withoutPassword((err as Error).message, url)}`);
        } finally {
          await pool.end();
        }
      },
    },
  },
};
