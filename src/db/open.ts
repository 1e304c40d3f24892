import { MIGRATIONS } from './migrations/index.js';
import { openSqlite, type Database } from './sqlite/index.js';

export type Db = Database;

/** Opens (creating if needed) the metadata database in WAL mode and applies pending migrations. */
export function openDatabase(file: string): Db {
  const db = openSqlite(file);
  db.pragma('journal_mode = WAL');
  // FULL: a committed object row survives power loss, like the fsynced bytes it points at.
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  migrate(db);
  return db;
}

function migrate(db: Db): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  for (let i = current; i < MIGRATIONS.length; i++) {
    const apply = db.transaction(() => {
      db.exec(MIGRATIONS[i] as string);
      db.pragma(`user_version = ${i + 1}`);
    });
    apply.immediate();
  }
}
