// Applies the PostgreSQL migrations (migrations/index.ts) in one transaction under an advisory lock: of
// two nodes starting at once, one migrates while the other waits, then finds nothing left to do.
// schema_migrations records each version applied.
import type pg from 'pg';
import { checkOut } from './pool.js';
import { PG_MIGRATIONS } from './migrations/index.js';

/** pg_advisory_xact_lock key of the migration run ('s3edge migrations' in no other use). */
const MIGRATION_LOCK = 0x5333_4544_4d49; // "S3EDMI"

export interface MigrationRun {
  /** Versions this run applied (1-based), in order; empty when the schema was current. */
  applied: number[];
  /** The schema's version now. */
  version: number;
}

export class SchemaTooNewError extends Error {
  constructor(readonly version: number) {
    super(`the PostgreSQL schema is at version ${version}, newer than this s3edge knows (${PG_MIGRATIONS.length}): a newer s3edge migrated it; run that version`);
    this.name = 'SchemaTooNewError';
  }
}

export async function migratePostgres(pool: pg.Pool, migrations: readonly string[] = PG_MIGRATIONS): Promise<MigrationRun> {
  const { client, release } = await checkOut(pool);
  try {
    await client.query('BEGIN');
    // A long migration, or the wait for another node's, is not a runaway statement.
    await client.query('SET LOCAL statement_timeout = 0');
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)');
    const { rows } = await client.query<{ version: number | null }>('SELECT max(version) AS version FROM schema_migrations');
    const current = rows[0]?.version ?? 0;
    if (current > migrations.length) throw new SchemaTooNewError(current);
    const applied: number[] = [];
    for (let i = current; i < migrations.length; i++) {
      await client.query(migrations[i] as string);
      await client.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)', [i + 1, Date.now()]);
      applied.push(i + 1);
    }
    await client.query('COMMIT');
    return { applied, version: Math.max(current, migrations.length) };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    release();
  }
}
