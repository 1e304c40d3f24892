// DashboardSessions over a real SQLite database with an injected clock: what a cookie token resolves
// to at each moment of its life (idle and absolute expiry, the 30 s resolution of last-seen), what is
// stored (the token's SHA-256, never the token), expired rows forgotten at the next sign-in, tokens
// that are not ours, and ending a user's sessions.
import t from 'tap';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { csrfMatches, DashboardSessions, type LiveSession } from '../../src/auth/sessions.js';
import { openDatabase, type Db } from '../../src/db/open.js';
import { createRepos, type Repos } from '../../src/db/repos/index.js';
import { tempDir } from '../helpers/temp-data.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const IDLE = 10 * MINUTE;
const MAX = 60 * MINUTE;
/** How often last_seen_at is written (TOUCH_EVERY_MS in src/auth/sessions.ts). */
const TOUCH = 30 * SECOND;
const START = Date.parse('2026-11-25T12:00:00Z');

interface Fixture {
  db: Db;
  repos: Repos;
  sessions: DashboardSessions;
  clock: { now: number };
  userId: string;
  otherId: string;
}

async function fixture(t: { teardown(fn: () => void): void }): Promise<Fixture> {
  const db = openDatabase(join(tempDir(t), 'meta.db'));
  t.teardown(() => db.close());
  const repos = createRepos(db);
  const clock = { now: START };
  const sessions = new DashboardSessions(repos.sessions, { idleMs: IDLE, maxMs: MAX }, () => clock.now);
  return { db, repos, sessions, clock, userId: (await repos.users.create('ana')).id, otherId: (await repos.users.create('bo')).id };
}

function sha256(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}

function rowCount(db: Db): number {
  return (db.prepare('SELECT COUNT(*) AS n FROM dashboard_sessions').get() as { n: number }).n;
}

t.test('a fresh session: random tokens, only the SHA-256 of the cookie token stored', async (t) => {
  const f = await fixture(t);
  const a = await f.sessions.open(f.userId);
  const b = await f.sessions.open(f.userId);
  t.match(a.token, /^[A-Za-z0-9_-]{43}$/);
  t.match(a.csrfToken, /^[A-Za-z0-9_-]{43}$/);
  t.not(a.token, a.csrfToken);
  t.not(a.token, b.token, 'each sign-in its own token');
  t.not(a.csrfToken, b.csrfToken, 'and its own CSRF token');
  const live = await f.sessions.resolve(a.token);
  t.same(live, { userId: f.userId, csrfToken: a.csrfToken, id: sha256(a.token).slice(0, 16) });
  const rows = f.db.prepare('SELECT * FROM dashboard_sessions').all() as Record<string, unknown>[];
  t.equal(rows.length, 2);
  const dump = JSON.stringify(rows);
  t.notOk(dump.includes(a.token) || dump.includes(b.token), 'no cookie token in the table');
  t.match((await f.repos.sessions.get(sha256(a.token))), { userId: f.userId, createdAt: START, lastSeenAt: START });
});

t.test('idle expiry: alive just under sessionIdle, over at it (and the row is gone)', async (t) => {
  const f = await fixture(t);
  const cases: [string, number, boolean][] = [
    ['at sign-in', 0, true],
    ['one second in', SECOND, true],
    ['1 ms before idle', IDLE - 1, true],
    ['at idle', IDLE, false],
    ['1 ms after idle', IDLE + 1, false],
    ['a day later', 24 * 60 * MINUTE, false],
  ];
  for (const [what, after, alive] of cases) {
    f.clock.now = START;
    const { token } = await f.sessions.open(f.userId);
    f.clock.now = START + after;
    t.equal((await f.sessions.resolve(token)) !== undefined, alive, `${what}: ${alive ? 'alive' : 'over'}`);
    t.equal((await f.repos.sessions.get(sha256(token))) !== undefined, alive, `${what}: row ${alive ? 'kept' : 'deleted'}`);
    if (!alive) t.equal((await f.sessions.resolve(token)), undefined, `${what}: stays over`);
  }
});

t.test('absolute expiry: a busy session ends sessionMax after sign-in', async (t) => {
  const f = await fixture(t);
  for (const [what, end, alive] of [['1 ms before max', MAX - 1, true], ['at max', MAX, false], ['1 ms after max', MAX + 1, false]] as const) {
    f.clock.now = START;
    const { token } = await f.sessions.open(f.userId);
    // Used every half idle period, so idle expiry never applies.
    for (let at = START + IDLE / 2; at < START + Math.min(end, MAX); at += IDLE / 2) {
      f.clock.now = at;
      t.ok((await f.sessions.resolve(token)), `${what}: alive while busy, ${(at - START) / MINUTE} min in`);
    }
    f.clock.now = START + end;
    t.equal((await f.sessions.resolve(token)) !== undefined, alive, `${what}: ${alive ? 'alive' : 'over'} though used ${IDLE / 2 / MINUTE} min ago`);
  }
});

t.test('last-seen is written at most every 30 s: idle expiry counts from the last write', async (t) => {
  const f = await fixture(t);
  const { token } = await f.sessions.open(f.userId);
  const hash = sha256(token);
  f.clock.now = START + TOUCH - 1;
  t.ok((await f.sessions.resolve(token)));
  t.equal((await f.repos.sessions.get(hash))?.lastSeenAt, START, 'a use within 30 s of the last write is not written');
  f.clock.now = START + TOUCH;
  t.ok((await f.sessions.resolve(token)));
  t.equal((await f.repos.sessions.get(hash))?.lastSeenAt, START + TOUCH, 'a use 30 s after it is');
  f.clock.now = START + TOUCH + IDLE - 1;
  t.ok((await f.sessions.resolve(token)), 'idle counts from the written use');
  f.clock.now = START + TOUCH + IDLE - 1 + IDLE;
  t.equal((await f.sessions.resolve(token)), undefined, 'idle again: over');

  // An unwritten use does not extend the session: idle counts from the last written one.
  f.clock.now = START;
  const other = await f.sessions.open(f.userId);
  f.clock.now = START + TOUCH - 1;
  t.ok((await f.sessions.resolve(other.token)));
  f.clock.now = START + IDLE;
  t.equal((await f.sessions.resolve(other.token)), undefined, 'over at idle after the sign-in, the unwritten use notwithstanding');
});

t.test('expired rows are deleted at the next sign-in, live ones kept', async (t) => {
  const f = await fixture(t);
  const idle = await f.sessions.open(f.userId);
  const busy = await f.sessions.open(f.otherId);
  // `busy` is used every half idle period, so only its age ends it; `idle` is never used again.
  for (let at = START + IDLE / 2; at <= START + MAX - IDLE / 2; at += IDLE / 2) {
    f.clock.now = at;
    t.ok((await f.sessions.resolve(busy.token)));
  }
  t.equal(rowCount(f.db), 2, 'an expired row that nobody asks for stays until a sign-in');
  const live = await f.sessions.open(f.userId);
  t.equal((await f.repos.sessions.get(sha256(idle.token))), undefined, 'the sign-in deleted the idle one');
  t.ok((await f.repos.sessions.get(sha256(busy.token))), 'the busy one is kept');
  t.equal(rowCount(f.db), 2);

  f.clock.now = START + MAX;
  t.equal(rowCount(f.db), 2, 'the busy one is past its maximum age, still stored');
  const fresh = await f.sessions.open(f.otherId);
  t.equal((await f.repos.sessions.get(sha256(busy.token))), undefined, 'the next sign-in deleted it');
  t.ok((await f.repos.sessions.get(sha256(live.token))), 'a live one stays');
  t.ok((await f.repos.sessions.get(sha256(fresh.token))), 'and the new one is there');
  t.equal(rowCount(f.db), 2);
});

t.test('tokens that are not ours resolve to nothing and close nothing', async (t) => {
  const f = await fixture(t);
  const { token } = await f.sessions.open(f.userId);
  const notOurs = [
    '',
    'short',
    token.slice(0, 42),
    `${token}A`,
    `${token.slice(0, 42)}+`,
    `${token.slice(0, 42)}/`,
    `${token.slice(0, 42)}=`,
    ` ${token.slice(1)}`,
    `${token.slice(0, 21)}%${token.slice(22)}`,
    'A'.repeat(43), // well-formed, unknown
    sha256(token), // the stored hash is no token
    'x'.repeat(100_000),
  ];
  for (const bad of notOurs) {
    t.equal((await f.sessions.resolve(bad)), undefined, `resolve ${JSON.stringify(bad.slice(0, 50))}`);
    await f.sessions.close(bad);
  }
  t.ok((await f.sessions.resolve(token)), 'the real session is untouched by all of that');
  t.equal(rowCount(f.db), 1);
});

t.test('close ends one session; closeAll ends every session of one user; deleting the user ends them too', async (t) => {
  const f = await fixture(t);
  const a1 = await f.sessions.open(f.userId);
  const a2 = await f.sessions.open(f.userId);
  const a3 = await f.sessions.open(f.userId);
  const b1 = await f.sessions.open(f.otherId);
  await f.sessions.close(a1.token);
  t.equal((await f.sessions.resolve(a1.token)), undefined, 'closed');
  await f.sessions.close(a1.token);
  t.ok((await f.sessions.resolve(a2.token)), 'closing one leaves the others');
  t.equal((await f.sessions.closeAll(f.userId)), 2, 'two more of ana');
  t.equal((await f.sessions.resolve(a2.token)), undefined);
  t.equal((await f.sessions.resolve(a3.token)), undefined);
  t.ok((await f.sessions.resolve(b1.token)), "bo's session is not touched");
  t.equal((await f.sessions.closeAll(f.userId)), 0, 'none left');
  t.equal((await f.repos.sessions.deleteForUser(f.userId)), 0);
  t.ok((await f.repos.users.delete(f.otherId)));
  t.equal((await f.sessions.resolve(b1.token)), undefined, 'a deleted user has no session');
  t.equal(rowCount(f.db), 0);
});

t.test('csrfMatches: the session\'s own token only', async (t) => {
  const f = await fixture(t);
  const opened = await f.sessions.open(f.userId);
  const session = (await f.sessions.resolve(opened.token)) as LiveSession;
  const other = await f.sessions.open(f.userId);
  t.equal(csrfMatches(session, opened.csrfToken), true);
  t.equal(csrfMatches(session, other.csrfToken), false, "another session's token");
  t.equal(csrfMatches(session, opened.token), false, 'the cookie token is not the CSRF token');
  t.equal(csrfMatches(session, opened.csrfToken.slice(0, -1)), false, 'shorter');
  t.equal(csrfMatches(session, `${opened.csrfToken}x`), false, 'longer');
  t.equal(csrfMatches(session, ''), false, 'empty');
  t.equal(csrfMatches(session, undefined), false, 'absent');
  t.equal(csrfMatches(session, [opened.csrfToken, opened.csrfToken]), false, 'repeated header');
});
