// patches/sonic-boom+4.2.1.patch (docs/RUNTIME.md "Patched dependencies"): pino's asynchronous
// destination remembers the byte length of its last pending chunk instead of counting it on every
// write. Lines of every size around the chunk limit (maxWrite), ASCII and multi-byte, written while
// earlier writes are in flight, all reach the file whole and in order, and no single write passes the
// limit by more than the one line that opened its chunk.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { destination } from 'pino';
import { tempDir } from '../helpers/temp-data.js';

t.test('every line whole and in order, chunks within maxWrite', async (t) => {
  const file = join(tempDir(t), 'out.log');
  const maxWrite = 1024;
  // pino's destination() is the SonicBoom src/log-format.ts writes through.
  const sonic = destination({ dest: file, sync: false, maxWrite });
  await new Promise<void>((resolve) => sonic.once('ready', () => resolve()));
  const written: number[] = [];
  sonic.on('write', (n: number) => written.push(n));
  const lines: string[] = [];
  for (let i = 0; i < 3000; i++) {
    const size = (i * 37) % (maxWrite + 10);
    const fill = i % 3 === 0 ? 'é'.repeat(Math.floor(size / 2)) : i % 3 === 1 ? '€'.repeat(Math.floor(size / 3)) : 'x'.repeat(size);
    const line = `${i} ${fill}\n`;
    lines.push(line);
    sonic.write(line);
    // Now and then a turn of the event loop: writes land while one is in flight, and after it.
    if (i % 97 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  await new Promise<void>((resolve, reject) => {
    sonic.once('close', () => resolve());
    sonic.once('error', reject);
    sonic.end();
  });
  const expected = lines.join('');
  const actual = readFileSync(file, 'utf8');
  t.equal(actual.length, expected.length, 'as many characters as were written');
  t.ok(actual === expected, 'every line, whole, in the order written');
  const longest = Math.max(...lines.map((l) => Buffer.byteLength(l)));
  t.ok(written.length > 1, `${written.length} writes`);
  t.ok(
    written.every((n) => n <= Math.max(maxWrite, longest)),
    'no write larger than maxWrite, or than the one line that opened its chunk',
  );
});
