// Key-value settings (string values).
import type { Statement } from 'better-sqlite3';
import type { Db } from '../open.js';

export class SettingsRepo {
  private readonly getStmt: Statement<[string], { value: string }>;
  private readonly setStmt: Statement<[string, string]>;
  private readonly deleteStmt: Statement<[string]>;

  constructor(db: Db) {
    this.getStmt = db.prepare('SELECT value FROM settings WHERE name = ?');
    this.setStmt = db.prepare(
      'INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value',
    );
    this.deleteStmt = db.prepare('DELETE FROM settings WHERE name = ?');
  }

  get(name: string): string | undefined {
    return this.getStmt.get(name)?.value;
  }

  set(name: string, value: string): void {
    this.setStmt.run(name, value);
  }

  delete(name: string): boolean {
    return this.deleteStmt.run(name).changes > 0;
  }
}
