import t from 'tap';
import { bucketNameProblem, validateBucketName } from '../../src/buckets/bucket-name.js';
import { S3Error } from '../../src/errors/s3-errors.js';

const VALID = [
  'abc',
  'a'.repeat(63),
  'my-bucket',
  'my.bucket.name',
  '123',
  '1-2',
  'docexamplebucket1',
  'log-delivery-march-2020',
  'my-hosted-content',
  'xn-foo', // only the exact prefix xn-- is reserved
  'sthree', // the prefix is 'sthree-'
  'bucket-s3alias-x',
  'apis',
  'storage1',
  'a.b.c.d', // looks dotted, but not digits
  '1.2.3', // three parts: not an IPv4 address
  '256.1.1.1a',
];

const INVALID: [string, RegExp][] = [
  ['', /3 to 63/],
  ['ab', /3 to 63/],
  ['a'.repeat(64), /3 to 63/],
  ['MyBucket', /lowercase/],
  ['my_bucket', /lowercase/],
  ['my bucket', /lowercase/],
  ['bücket', /lowercase/],
  ['-bucket', /begin and end/],
  ['bucket-', /begin and end/],
  ['.bucket', /begin and end/],
  ['bucket.', /begin and end/],
  ['my..bucket', /adjacent dots/],
  ['my.-bucket', /hyphen next to a dot/],
  ['my-.bucket', /hyphen next to a dot/],
  ['192.168.5.4', /IP address/],
  ['10.0.0.1', /IP address/],
  ['xn--bucket', /xn--/],
  ['sthree-bucket', /sthree-/],
  ['sthree-configurator', /sthree-/],
  ['amzn-s3-demo-bucket', /amzn-s3-demo-/],
  ['bucket-s3alias', /-s3alias/],
  ['bucket--ol-s3', /--ol-s3/],
  ['bucket.mrap', /\.mrap/],
  ['bucket--x-s3', /--x-s3/],
  ['bucket--table-s3', /--table-s3/],
  ['api', /reserved/],
  ['storage', /reserved/],
];

t.test('valid names pass', async (t) => {
  for (const name of VALID) {
    t.equal(bucketNameProblem(name), undefined, name);
    t.doesNotThrow(() => validateBucketName(name), name);
  }
});

t.test('invalid names throw InvalidBucketName (400) with the reason', async (t) => {
  for (const [name, reason] of INVALID) {
    t.match(bucketNameProblem(name), reason, name);
    try {
      validateBucketName(name);
      t.fail(`${name} accepted`);
    } catch (err) {
      t.ok(err instanceof S3Error, name);
      t.match(err, { code: 'InvalidBucketName', status: 400, extra: { BucketName: name } }, name);
    }
  }
});
