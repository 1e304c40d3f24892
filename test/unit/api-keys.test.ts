import t from 'tap';
import { join } from 'node:path';
import { ApiKeyVerifier, mintApiKey, parseScopes } from '../../src/auth/api-keys.js';
import { intParam, parseQueryFirstValue } from '../../src/api/query.js';
import { openDatabase } from '../../src/db/open.js';
import { createRepos } from '../../src/db/repos/index.js';
import { tempDir } from '../helpers/temp-data.js';

t.test('tokens: minted once, stored hashed, verified in constant time, forgotten on delete', async (t) => {
  const db = openDatabase(join(tempDir(t), 'meta.db'));
  t.teardown(() => db.close());
  const repos = createRepos(db);
  const user = await repos.users.create('ana');
  const { key, token } = await mintApiKey(repos.apiKeys, user.id, 'ci', ['assets:read', 'usage:read']);
  t.match(token, /^s3e_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$/);
  const stored = db.prepare('SELECT * FROM api_keys').all() as Record<string, unknown>[];
  t.equal(stored.length, 1);
  t.notOk(JSON.stringify(stored).includes(token.split('_')[2] as string), 'the secret is not stored');
  const verifier = new ApiKeyVerifier(repos.apiKeys);
  const p = await verifier.verify(token);
  t.equal(p?.userId, user.id);
  t.same([...(p?.scopes ?? [])], ['assets:read', 'usage:read']);
  t.equal(await verifier.verify(token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A')), undefined, 'a wrong secret');
  t.equal(await verifier.verify('s3e_nothex_x'), undefined, 'malformed');
  t.equal(await verifier.verify(''), undefined);
  await repos.apiKeys.delete(key.id);
  verifier.forget(key.id);
  t.equal(await verifier.verify(token), undefined, 'deleted');
});

t.test('scope lists', async (t) => {
  t.same(parseScopes(' assets:read, assets:write ,assets:read'), { scopes: ['assets:read', 'assets:write'], unknown: [] });
  t.same(parseScopes('assets:read,admin'), { scopes: ['assets:read'], unknown: ['admin'] });
});

t.test('lenient integer query parameters', async (t) => {
  t.equal(intParam(undefined, 20, 1, 200), 20);
  t.equal(intParam('abc', 20, 1, 200), 20);
  t.equal(intParam('-3', 20, 1, 200), 20);
  t.equal(intParam('0', 20, 1, 200), 20);
  t.equal(intParam('1.5', 20, 1, 200), 20);
  t.equal(intParam('7', 20, 1, 200), 7);
  t.equal(intParam('5000', 20, 1, 200), 200, 'capped');
  t.equal(intParam(['3'], 20, 1, 200), 20, 'an array is no value (the API parser never makes one)');
});

t.test('the API query parser: one string per key, the first of a repeated key', async (t) => {
  t.same({ ...parseQueryFirstValue('limit=2&limit=3&page=1') }, { limit: '2', page: '1' });
  t.same({ ...parseQueryFirstValue('search=a+b%20c&kind=') }, { search: 'a b c', kind: '' });
  const odd = parseQueryFirstValue('__proto__=x&constructor=y&hasOwnProperty=z');
  t.equal(Object.getPrototypeOf(odd), null, 'no prototype to pollute');
  t.same([odd['__proto__'], odd['constructor'], odd['hasOwnProperty']], ['x', 'y', 'z'], 'ordinary keys');
  t.same({ ...parseQueryFirstValue('') }, {});
});
