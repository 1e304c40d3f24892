import t from 'tap';
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, configFlags, envName, flagName, loadConfig, parseDurationMs, parseSize } from '../../src/config/load.js';
import { isPostgresUrl, redactUrl } from '../../src/db/pg/url.js';

t.test('names of env variables and flags follow the config paths', async (t) => {
  t.equal(envName('dataDir'), 'S3EDGE_DATA_DIR');
  t.equal(envName('tls.port'), 'S3EDGE_TLS_PORT');
  t.equal(flagName('rootAccessKey'), 'root-access-key');
  t.equal(configFlags().get('tls-cert'), 'tls.cert');
  t.equal(configFlags().get('port'), 'port');
});

t.test('defaults, then env, then flags', async (t) => {
  const d = loadConfig({ env: {} });
  t.equal(d.port, 9000);
  t.equal(d.region, 'us-east-1');
  t.equal(d.dataDir, './data');
  t.equal(d.tls.port, null);
  const e = loadConfig({ env: { S3EDGE_PORT: '0', S3EDGE_DATA_DIR: '/x', S3EDGE_S3_DOMAINS: 's3.local, s3.test', S3EDGE_TLS_PORT: '9443' } });
  t.equal(e.port, 0);
  t.equal(e.dataDir, '/x');
  t.same(e.s3Domains, ['s3.local', 's3.test']);
  t.equal(e.tls.port, 9443);
  const f = loadConfig({ env: { S3EDGE_PORT: '1234' }, flags: { port: '4321', host: '0.0.0.0' } });
  t.equal(f.port, 4321, 'flag beats env');
  t.equal(f.host, '0.0.0.0');
});

t.test('a config file and *_FILE secrets', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 's3edge-config-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'c.json'), JSON.stringify({ region: 'eu-west-3', tls: { port: 8443 } }));
  await writeFile(join(dir, 'secret'), 'supersecret\n');
  const c = loadConfig({ env: { S3EDGE_CONFIG: join(dir, 'c.json'), S3EDGE_ROOT_SECRET_KEY_FILE: join(dir, 'secret') } });
  t.equal(c.region, 'eu-west-3');
  t.equal(c.tls.port, 8443);
  t.equal(c.tls.host, '', 'nested defaults survive a partial file');
  t.equal(c.rootSecretKey, 'supersecret');
});

t.test('metadata: sqlite by default, a PostgreSQL URL from env, *_FILE or --metadata; never echoed', async (t) => {
  t.equal(loadConfig({ env: {} }).metadata, 'sqlite');
  const url = 'postgres://s3edge:pa55word@db.internal:5432/s3edge';
  t.equal(loadConfig({ env: { S3EDGE_METADATA: url } }).metadata, url);
  t.equal(loadConfig({ env: {}, flags: { metadata: 'postgresql://db/s3edge' } }).metadata, 'postgresql://db/s3edge', 'the --metadata flag');
  t.equal(configFlags().get('metadata'), 'metadata');
  const dir = await mkdtemp(join(tmpdir(), 's3edge-config-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'url'), `${url}\n`);
  t.equal(loadConfig({ env: { S3EDGE_METADATA_FILE: join(dir, 'url') } }).metadata, url, 'S3EDGE_METADATA_FILE');
  for (const bad of ['mysql://u:pa55word@h/db', 'Postgres://u:pa55word@h/db', 'postgres://', '']) {
    const err = t.throws(() => loadConfig({ env: { S3EDGE_METADATA: bad } })) as Error;
    t.equal(err.message, "config: metadata must be 'sqlite' or a postgres:// or postgresql:// URL", `refused: ${bad === '' ? '(empty)' : 'a ' + bad.split(':')[0] + ' URL'}, the value not shown`);
  }
});

t.test('a PostgreSQL URL is printed with its password redacted', async (t) => {
  t.ok(isPostgresUrl('postgres://h/db') && isPostgresUrl('postgresql://h/db'));
  t.notOk(isPostgresUrl('sqlite') || isPostgresUrl('http://h/db'));
  t.equal(redactUrl('postgres://s3edge:pa55word@db:5432/s3edge'), 'postgres://s3edge:***@db:5432/s3edge');
  t.equal(redactUrl('postgres://s3edge:p%40ss%2Fw@db/s3edge?sslmode=require'), 'postgres://s3edge:***@db/s3edge?sslmode=require', 'an escaped password');
  t.equal(redactUrl('postgres://db/s3edge?user=u&password=pa55word'), 'postgres://db/s3edge?user=u&password=***', 'a password in the query');
  t.equal(redactUrl('postgres://s3edge@db/s3edge'), 'postgres://s3edge@db/s3edge', 'no password: as it is');
  t.equal(redactUrl('postgres://u:pa55word@[bad/db'), 'postgres://u:***@[bad/db', 'not even a valid URL');
});

t.test('a bad value stops with one line naming the key', async (t) => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ S3EDGE_PORT: '70000' }, /^config: port must be <= 65535 \(got 70000\)$/],
    [{ S3EDGE_PORT: 'abc' }, /^config: port must be integer/],
    [{ S3EDGE_TLS_PORT: '-1' }, /^config: tls\.port/],
    [{ S3EDGE_REGION: 'US EAST' }, /^config: region/],
    [{ S3EDGE_LOG_LEVEL: 'loud' }, /^config: logLevel/],
    [{ S3EDGE_MAX_SKEW_SECONDS: '0' }, /^config: maxSkewSeconds/],
  ];
  for (const [env, re] of cases) {
    try {
      loadConfig({ env });
      t.fail(`accepted ${JSON.stringify(env)}`);
    } catch (err) {
      t.type(err, ConfigError);
      t.match((err as Error).message, re);
      t.notMatch((err as Error).message, /\n/, 'one line');
    }
  }
  t.throws(() => loadConfig({ env: { S3EDGE_MASTER_KEY_FILE: '/nonexistent/x' } }), /masterKey: cannot read S3EDGE_MASTER_KEY_FILE/);
});

t.test('storage backend: disk by default; s3 settings from env, credentials also from *_FILE', async (t) => {
  t.equal(loadConfig({ env: {} }).storage.backend, 'disk', 'npm start keeps disk');
  const dir = await mkdtemp(join(tmpdir(), 's3edge-config-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'id'), 'AKIDFROMFILE\n');
  await writeFile(join(dir, 'secret'), 'upstream-secret\n');
  const c = loadConfig({
    env: {
      S3EDGE_STORAGE_BACKEND: 's3',
      S3EDGE_STORAGE_S3_ENDPOINT: 'http://127.0.0.1:9999',
      S3EDGE_STORAGE_S3_BUCKET: 'bytes',
      S3EDGE_STORAGE_S3_FORCE_PATH_STYLE: 'false',
      S3EDGE_STORAGE_S3_PREFIX: 'site-a/',
      S3EDGE_STORAGE_S3_PART_BYTES: '16MiB',
      S3EDGE_STORAGE_S3_ACCESS_KEY_ID_FILE: join(dir, 'id'),
      S3EDGE_STORAGE_S3_SECRET_ACCESS_KEY_FILE: join(dir, 'secret'),
    },
  });
  t.same(c.storage, {
    backend: 's3',
    s3: {
      endpoint: 'http://127.0.0.1:9999',
      region: 'us-east-1',
      bucket: 'bytes',
      accessKeyId: 'AKIDFROMFILE',
      secretAccessKey: 'upstream-secret',
      forcePathStyle: false,
      prefix: 'site-a/',
      partBytes: 16 * 1024 * 1024,
    },
  });
  t.throws(() => loadConfig({ env: { S3EDGE_STORAGE_S3_PART_BYTES: '4MiB' } }), /storage\.s3\.partBytes must be >= 5242880/, 'S3 parts are at least 5 MiB');
  const limits = loadConfig({ env: { S3EDGE_LIMITS_UPLOAD_BUFFER_BYTES: '64MiB', S3EDGE_LIMITS_UPLOAD_BUFFER_WAIT_MS: '2s' } }).limits;
  t.equal(limits.uploadBufferBytes, 64 * 1024 * 1024);
  t.equal(limits.uploadBufferWaitMs, 2000);
  t.equal(loadConfig({ env: {} }).limits.uploadBufferBytes, 256 * 1024 * 1024, 'the upload budget is 256 MiB by default');
  t.throws(() => loadConfig({ env: { S3EDGE_STORAGE_BACKEND: 'nfs' } }), { message: 'config: storage.backend must be one of "disk", "s3" (got "nfs")' }, 'a choice names its choices');
  t.throws(
    () => loadConfig({ env: { S3EDGE_SQLITE_DRIVER: 'better-sqlite3' } }),
    { message: 'config: sqliteDriver must be one of "auto", "node-sqlite" (got "better-sqlite3"); better-sqlite3 went with Node 20: node:sqlite is the driver (docs/RUNTIME.md)' },
    'a driver that is gone says why',
  );
  t.throws(() => loadConfig({ env: { S3EDGE_STORAGE_S3_PREFIX: 'no-slash' } }), /storage\.s3\.prefix/);
  const err = t.throws(() => loadConfig({ env: { S3EDGE_STORAGE_S3_SECRET_ACCESS_KEY: 'x'.repeat(300) } })) as Error;
  t.notMatch(err.message, /xxxx/, 'a rejected secret is not echoed');
});

t.test('sizes, durations and header names as users type them, from env, flags and a file', async (t) => {
  t.equal(parseSize('256MiB'), 256 * 1024 * 1024);
  t.equal(parseSize('10GB'), 10e9);
  t.equal(parseSize('64 kib'), 65536);
  t.equal(parseSize('1.5MiB'), 1572864);
  t.equal(parseSize('4096'), 4096);
  for (const bad of ['lots', '12XB', '-1MiB', '', '0.5B', 'MiB']) t.equal(parseSize(bad), undefined, `not a size: ${JSON.stringify(bad)}`);
  t.equal(parseDurationMs('30s', 's'), 30_000);
  t.equal(parseDurationMs('1h30m', 's'), 5_400_000);
  t.equal(parseDurationMs('250ms', 'ms'), 250);
  t.equal(parseDurationMs('7', 'd'), 7 * 86_400_000, 'a bare number is the setting\'s own unit');
  for (const bad of ['soon', '5 minutes', '1y', '']) t.equal(parseDurationMs(bad, 's'), undefined, `not a duration: ${JSON.stringify(bad)}`);

  const c = loadConfig({
    env: { S3EDGE_CDN_CACHE_MEMORY_BYTES: '256MiB', S3EDGE_CDN_LOG_FLUSH_INTERVAL_MS: '2s', S3EDGE_CDN_COUNTRY_HEADER: 'CF-IPCountry' },
    flags: { maxObjectSize: '1GiB', multipartMaxAgeSeconds: '7d', 'cdn.log.retentionDays': '14', maxSkewSeconds: '15m' },
  });
  t.equal(c.cdn.cache.memoryBytes, 268435456);
  t.equal(c.cdn.log.flushIntervalMs, 2000);
  t.equal(c.cdn.countryHeader, 'cf-ipcountry', 'header names in any case, held lowercased');
  t.equal(c.maxObjectSize, 1073741824);
  t.equal(c.multipartMaxAgeSeconds, 604800);
  t.equal(c.cdn.log.retentionDays, 14);
  t.equal(c.maxSkewSeconds, 900);

  const dir = await mkdtemp(join(tmpdir(), 's3edge-config-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'c.json'), JSON.stringify({ inlineObjectMaxBytes: '32KiB', cdn: { log: { retentionDays: '2d' }, cache: { diskBytes: 1000 } } }));
  const f = loadConfig({ env: {}, configFile: join(dir, 'c.json') });
  t.equal(f.inlineObjectMaxBytes, 32768, 'a size in the JSON file');
  t.equal(f.cdn.log.retentionDays, 2, 'a duration in the JSON file');
  t.equal(f.cdn.cache.diskBytes, 1000, 'numbers still work');

  const bad: [Record<string, string>, string][] = [
    [{ 'cdn.cache.memoryBytes': 'lots' }, 'config: cdn.cache.memoryBytes must be a size like 256MiB, 10GB or a number of bytes (got "lots")'],
    [{ 'cdn.log.flushIntervalMs': 'soon' }, 'config: cdn.log.flushIntervalMs must be a duration like 30s, 5m, 12h or 7d, or a number of milliseconds (got "soon")'],
    [{ 'cdn.log.retentionDays': '36h' }, 'config: cdn.log.retentionDays must be a whole number of days (got "36h")'],
    [{ maxObjectSize: '6TiB' }, 'config: maxObjectSize must be <= 5497558138880 (got 6597069766656)'],
    // What is accepted, in the user's words and with what they typed: not the pattern of the lowercased form.
    [{ 'cdn.countryHeader': 'CF IPCountry' }, 'config: cdn.countryHeader must be a header name: letters (any case), digits and hyphens, at most 64, or empty for none (got "CF IPCountry")'],
    [{ 'cdn.countryHeader': 'X_Country' }, 'config: cdn.countryHeader must be a header name: letters (any case), digits and hyphens, at most 64, or empty for none (got "X_Country")'],
    [{ maxObjectSize: '-5' }, 'config: maxObjectSize must be >= 1 (got -5)'],
  ];
  for (const [flags, message] of bad) {
    t.throws(() => loadConfig({ env: {}, flags }), new ConfigError(message), message);
  }
});

t.test('credits at zero: refuse uploads by default; suspend delivery after a grace of hours, fractions allowed', async (t) => {
  const defaults = loadConfig({ env: {} }).credits;
  t.equal(defaults.atZero, 'refuse-uploads', "today's behaviour by default");
  t.equal(defaults.deliveryGraceHours, 72);
  t.ok(configFlags().has('credits-at-zero') && configFlags().has('credits-delivery-grace-hours'), 'serve flags --credits-at-zero, --credits-delivery-grace-hours');
  const flagged = loadConfig({ env: {}, flags: { 'credits.atZero': 'suspend-delivery', 'credits.deliveryGraceHours': '0.25' } }).credits;
  t.same([flagged.atZero, flagged.deliveryGraceHours], ['suspend-delivery', 0.25], 'from flags');
  const env = loadConfig({ env: { S3EDGE_CREDITS_AT_ZERO: 'suspend-delivery', S3EDGE_CREDITS_DELIVERY_GRACE_HOURS: '0' } }).credits;
  t.same([env.atZero, env.deliveryGraceHours], ['suspend-delivery', 0], 'from the environment; 0 is no grace');
  t.throws(
    () => loadConfig({ env: { S3EDGE_CREDITS_AT_ZERO: 'suspend' } }),
    { message: 'config: credits.atZero must be one of "refuse-uploads", "suspend-delivery" (got "suspend")' },
    'a bad choice names the accepted ones',
  );
  t.throws(() => loadConfig({ env: { S3EDGE_CREDITS_DELIVERY_GRACE_HOURS: '-1' } }), /^config: credits\.deliveryGraceHours must be >= 0/);
  t.throws(() => loadConfig({ env: { S3EDGE_CREDITS_DELIVERY_GRACE_HOURS: '3d' } }), /^config: credits\.deliveryGraceHours must be number \(got "3d"\)/);
});
