// How the docs' examples are read for test/e2e/readme.test.ts and docs-examples.test.ts: fenced blocks with
// their info strings, and a shell block's commands as a reader would type them.
import t from 'tap';
import { codeBlocksOf, commandsOf } from '../helpers/doc-commands.js';

t.test('fenced blocks: language, the words after it, the line they start on', async (t) => {
  const md = 'intro, with ` ```sh runnable` inline\n\n```sh runnable\na\n```\ntext\n```ini runnable ~/.s3cfg\n[default]\n```\n```\nplain\n```\n';
  t.same(codeBlocksOf(md), [
    { lang: 'sh', info: ['runnable'], line: 3, body: 'a\n' },
    { lang: 'ini', info: ['runnable', '~/.s3cfg'], line: 7, body: '[default]\n' },
    { lang: '', info: [], line: 10, body: 'plain\n' },
  ]);
});

t.test("a shell block's commands: comments and blank lines dropped, continuations joined", async (t) => {
  const body = '# a comment\ns3edge users create ana   # trailing words\n\ncurl -H "A: b" \\\n  -F file=@x.png \\\n  http://127.0.0.1:9000/api\necho "#not a comment"\n';
  t.same(commandsOf(body), ['s3edge users create ana', 'curl -H "A: b" -F file=@x.png http://127.0.0.1:9000/api', 'echo "#not a comment"']);
});
