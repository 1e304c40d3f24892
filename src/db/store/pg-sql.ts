// The repositories' SQL (SQLite's placeholders: `?`, `@name`, `:name`, `$name`) as PostgreSQL's
// numbered `$1..$n`, with the values in that order. One translation per SQL text, cached by the store.
// String literals, quoted identifiers, comments and `::type` casts are left as they are.
import type { SqlParams } from './types.js';

export interface PgStatement {
  text: string;
  /** Positional (`?`): the count; named: each number's parameter name, in order. */
  names: string[] | number;
}

const IDENT = /[A-Za-z0-9_]/;

export function translatePlaceholders(sql: string): PgStatement {
  let out = '';
  let positional = 0;
  const names: string[] = [];
  let i = 0;
  while (i < sql.length) {
    const c = sql[i] as string;
    if (c === "'" || c === '"') {
      const end = sql.indexOf(c, i + 1);
      const stop = end === -1 ? sql.length : end + 1;
      out += sql.slice(i, stop);
      i = stop;
      // A doubled quote inside the literal is two literals back to back: the loop goes on the same way.
    } else if (c === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      const stop = end === -1 ? sql.length : end;
      out += sql.slice(i, stop);
      i = stop;
    } else if (c === '?') {
      out += `$${++positional}`;
      i++;
    } else if ((c === '@' || c === ':' || c === '$') && IDENT.test(sql[i + 1] ?? '') && !/[0-9]/.test(sql[i + 1] ?? '') && sql[i - 1] !== ':' && sql[i + 1] !== ':') {
      let j = i + 1;
      while (j < sql.length && IDENT.test(sql[j] as string)) j++;
      const name = sql.slice(i + 1, j);
      let n = names.indexOf(name);
      if (n === -1) n = names.push(name) - 1;
      out += `$${n + 1}`;
      i = j;
    } else {
      out += c;
      i++;
    }
  }
  if (positional > 0 && names.length > 0) throw new Error('a statement mixes ? and named parameters');
  return { text: out, names: names.length > 0 ? names : positional };
}

/** The values for `statement` from a repository's parameters; undefined becomes NULL. */
export function bindValues(statement: PgStatement, params: SqlParams | undefined): unknown[] {
  if (typeof statement.names === 'number') {
    const values = Array.isArray(params) ? (params as unknown[]) : [];
    return values.map((v) => (v === undefined ? null : v));
  }
  const named = (params ?? {}) as Record<string, unknown>;
  return statement.names.map((name) => named[name] ?? null);
}
