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

/** True for a UNIQUE or PRIMARY KEY violation raised by SQLite (either driver: db/sqlite/ names the codes alike). */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** True for a FOREIGN KEY violation raised by SQLite (either driver: db/sqlite/ names the codes alike). */
export function isForeignKeyViolation(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}
