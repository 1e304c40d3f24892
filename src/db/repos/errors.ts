// Constraint failures a repository reports in its own words instead of a raw SqliteError.

export type ConstraintReason = 'duplicate' | 'in_use';

export class ConstraintError extends Error {
  readonly reason: ConstraintReason;

  constructor(reason: ConstraintReason, message: string) {
    super(message);
    this.name = 'ConstraintError';
    this.reason = reason;
  }
}

/** PostgreSQL's SQLSTATEs for the same failures. */
const PG_UNIQUE_VIOLATION = '23505';
const PG_FOREIGN_KEY_VIOLATION = '23503';

/** True for a UNIQUE or PRIMARY KEY violation raised by SQLite (either driver: db/sqlite/ names the codes alike) or PostgreSQL. */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === PG_UNIQUE_VIOLATION;
}

/** True for a FOREIGN KEY violation raised by SQLite (either driver: db/sqlite/ names the codes alike) or PostgreSQL. */
export function isForeignKeyViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_FOREIGNKEY' || code === PG_FOREIGN_KEY_VIOLATION;
}
