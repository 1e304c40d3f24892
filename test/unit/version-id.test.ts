// Version ids: the shape isVersionId accepts, and never a leading '-' (which a command line would
// take for an option: aws s3api get-object --version-id -x... is a usage error).
import t from 'tap';
import { isVersionId, newVersionId } from '../../src/db/repos/object-versions.js';

t.test('10,000 new ids: each 32 URL-safe characters, none starting with "-", none repeated', async (t) => {
  const ids = Array.from({ length: 10_000 }, newVersionId);
  t.ok(ids.every(isVersionId), 'the accepted shape');
  t.equal(ids.filter((id) => id.startsWith('-')).length, 0, 'no leading -');
  t.equal(new Set(ids).size, ids.length, 'all different');
  t.ok(ids.some((id) => id.includes('-')), 'a - elsewhere is fine');
});
