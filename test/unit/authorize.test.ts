import t from 'tap';
import { authorize, POLICY, visibleBuckets, type Action } from '../../src/auth/authorize.js';
import type { Principal } from '../../src/auth/principal.js';
import { S3Error } from '../../src/errors/s3-errors.js';
import type { Bucket } from '../../src/db/repos/index.js';

const mine = { id: 'b-mine', ownerId: 'u-alice' };
const theirs = { id: 'b-theirs', ownerId: 'u-bob' };

const P = {
  root: { kind: 'root', userId: 'u-root', userName: 'root', accessKeyId: 'K0' },
  alice: { kind: 'account', userId: 'u-alice', userName: 'alice', accessKeyId: 'K1' },
  bob: { kind: 'account', userId: 'u-bob', userName: 'bob', accessKeyId: 'K2' },
  reader: { kind: 'bucket', userId: 'u-alice', userName: 'alice', accessKeyId: 'K3', bucketId: 'b-mine', bucketName: 'mine', permission: 'read' },
  writer: { kind: 'bucket', userId: 'u-alice', userName: 'alice', accessKeyId: 'K4', bucketId: 'b-mine', bucketName: 'mine', permission: 'read_write' },
  otherWriter: { kind: 'bucket', userId: 'u-bob', userName: 'bob', accessKeyId: 'K5', bucketId: 'b-theirs', bucketName: 'theirs', permission: 'read_write' },
} satisfies Record<string, Principal>;

type Who = keyof typeof P;

// Expected outcome on `mine` (owned by alice), or without a bucket for the service-level actions.
// Each row lists who is allowed; everyone else must get AccessDenied.
const EXPECTED: Record<Action, Who[]> = {
  ListBuckets: ['root', 'alice', 'bob', 'reader', 'writer', 'otherWriter'],
  CreateBucket: ['root', 'alice', 'bob'],
  DeleteBucket: ['root', 'alice'],
  BucketAdmin: ['root', 'alice'],
  BucketRead: ['root', 'alice', 'reader', 'writer'],
  ObjectRead: ['root', 'alice', 'reader', 'writer'],
  ObjectWrite: ['root', 'alice', 'writer'],
};

const SERVICE_ACTIONS: ReadonlySet<Action> = new Set(['ListBuckets', 'CreateBucket']);

function outcome(p: Principal, action: Action, bucket?: { id: string; ownerId: string }): 'allow' | 'deny' {
  try {
    authorize(p, action, bucket);
    return 'allow';
  } catch (err) {
    if (err instanceof S3Error && err.code === 'AccessDenied' && err.status === 403) return 'deny';
    throw err;
  }
}

t.test('every action x principal, on a bucket owned by alice', async (t) => {
  t.same(Object.keys(EXPECTED).sort(), Object.keys(POLICY).sort(), 'the table covers every action');
  for (const [action, allowed] of Object.entries(EXPECTED) as [Action, Who[]][]) {
    for (const who of Object.keys(P) as Who[]) {
      const bucket = SERVICE_ACTIONS.has(action) ? undefined : mine;
      t.equal(outcome(P[who], action, bucket), allowed.includes(who) ? 'allow' : 'deny', `${action} by ${who}`);
    }
  }
});

t.test('bucket actions on a bucket owned by someone else', async (t) => {
  for (const action of ['DeleteBucket', 'BucketAdmin', 'BucketRead', 'ObjectRead', 'ObjectWrite'] as const) {
    t.equal(outcome(P.root, action, theirs), 'allow', `${action} root`);
    t.equal(outcome(P.alice, action, theirs), 'deny', `${action} alice on bob's bucket`);
    t.equal(outcome(P.writer, action, theirs), 'deny', `${action} alice's bucket key on bob's bucket`);
  }
  t.equal(outcome(P.otherWriter, 'ObjectWrite', theirs), 'allow');
  t.equal(outcome(P.otherWriter, 'DeleteBucket', theirs), 'deny', 'bucket keys never delete buckets');
});

t.test('a bucket key is matched by bucket id, not by owner', async (t) => {
  const sameOwnerOtherBucket = { id: 'b-mine-2', ownerId: 'u-alice' };
  t.equal(outcome(P.writer, 'ObjectRead', sameOwnerOtherBucket), 'deny');
  t.equal(outcome(P.writer, 'ObjectWrite', sameOwnerOtherBucket), 'deny');
  t.equal(outcome(P.alice, 'ObjectWrite', sameOwnerOtherBucket), 'allow');
});

t.test('bucket actions without a bucket fail closed (except for root)', async (t) => {
  for (const action of ['DeleteBucket', 'BucketAdmin', 'BucketRead', 'ObjectRead', 'ObjectWrite'] as const) {
    t.equal(outcome(P.alice, action), 'deny', `${action} alice`);
    t.equal(outcome(P.writer, action), 'deny', `${action} writer`);
    t.equal(outcome(P.root, action), 'allow', `${action} root`);
  }
});

t.test('visibleBuckets: root all, account its own, bucket key its one bucket', async (t) => {
  const all: Bucket[] = [
    { id: 'b-mine', name: 'mine', ownerId: 'u-alice', region: 'r', createdAt: 1, public: false },
    { id: 'b-theirs', name: 'theirs', ownerId: 'u-bob', region: 'r', createdAt: 2, public: false },
    { id: 'b-more', name: 'more', ownerId: 'u-alice', region: 'r', createdAt: 3, public: false },
  ];
  const repos = {
    buckets: {
      list: async (ownerId?: string) => all.filter((b) => ownerId === undefined || b.ownerId === ownerId),
      getById: async (id: string) => all.find((b) => b.id === id),
    },
  } as unknown as Parameters<typeof visibleBuckets>[1];
  const names = async (p: Principal): Promise<string[]> => (await visibleBuckets(p, repos)).map((b) => b.name);
  t.same(await names(P.root), ['mine', 'theirs', 'more']);
  t.same(await names(P.alice), ['mine', 'more']);
  t.same(await names(P.bob), ['theirs']);
  t.same(await names(P.reader), ['mine']);
  t.same(await names({ ...P.reader, bucketId: 'gone' }), []);
});
