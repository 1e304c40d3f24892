// A user row for tests that need an owner in a synchronous setup (the users repository is asynchronous).
import { newId } from '../../src/db/ids.js';
import type { Db } from '../../src/db/open.js';

/** The user named `name`, created if missing. */
export function userRow(db: Db, name: string): { id: string; name: string } {
  const found = db.prepare('SELECT id FROM users WHERE name = ?').get(name) as { id: string } | undefined;
  if (found) return { id: found.id, name };
  const id = newId();
  db.prepare('INSERT INTO users (id, name, created_at) VALUES (?, ?, ?)').run(id, name, Date.now());
  return { id, name };
}
