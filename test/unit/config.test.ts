import t from 'tap';
import { mkdtemp, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, configFlags, envName, flagName, loadConfig } from '../../src/config/load.js';

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
    },
  });
  t.throws(() => loadConfig({ env: { S3EDGE_STORAGE_BACKEND: 'nfs' } }), ConfigError);
  t.throws(() => loadConfig({ env: { S3EDGE_STORAGE_S3_PREFIX: 'no-slash' } }), /storage\.s3\.prefix/);
  const err = t.throws(() => loadConfig({ env: { S3EDGE_STORAGE_S3_SECRET_ACCESS_KEY: 'x'.repeat(300) } })) as Error;
  t.notMatch(err.message, /xxxx/, 'a rejected secret is not echoed');
});
