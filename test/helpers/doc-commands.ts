// Runs the shell examples of README.md and docs/*.md as a reader would type them (test/e2e/readme.test.ts,
// test/e2e/docs-examples.test.ts): one line after another in one folder that stands for the reader's home,
// with `s3edge` and `npx s3edge` being this build. The liberties are few and named by the caller: the
// server's real address for the one a doc shows, values a doc's reader fills in (a placeholder such as
// <ACCESS_KEY_ID> or AKEXAMPLE, taken from what an earlier command printed) and variables the reader sets
// themselves ($PASSWORD). Shell variables are the doc's own: `export A=...` and `NAME=$(...)` lines run as
// written and keep their values for the lines after them; a line that uses a variable nothing set, or a
// placeholder nothing filled, fails.
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Test } from 'tap';
import { S3EDGE_BIN } from './server.js';
import { run, type RunResult } from './conformance.js';

/** A fenced code block: its language, the rest of its info string, where it starts and its text. */
export interface CodeBlock {
  lang: string;
  /** The words after the language: `runnable`, and for a file, the path it is written to. */
  info: string[];
  line: number;
  body: string;
}

export function codeBlocksOf(markdown: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  for (const m of markdown.matchAll(/^```([^\n]*)\n([\s\S]*?)^```\s*$/gm)) {
    const [lang = '', ...info] = (m[1] ?? '').trim().split(/\s+/);
    blocks.push({ lang, info, line: markdown.slice(0, m.index).split('\n').length, body: m[2] ?? '' });
  }
  return blocks;
}

/** A shell block's commands: comments and blank lines dropped, `\` continuations joined. */
export function commandsOf(body: string): string[] {
  const commands: string[] = [];
  let pending = '';
  for (const raw of body.split('\n')) {
    const line = raw.replace(/\s+#\s.*$/, '').trimEnd();
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1).trim()} `;
      continue;
    }
    const command = (pending + line.trimStart()).trim();
    pending = '';
    if (command !== '' && !command.startsWith('#')) commands.push(command);
  }
  return commands;
}

/** Shell variables a line uses: $NAME and ${NAME}. */
function variablesUsed(command: string): string[] {
  return [...command.matchAll(/\$\{?([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1] as string);
}

/** A value the reader takes from an earlier command's output for a placeholder of later lines. */
export interface Take {
  /** The placeholder as the doc writes it: `<ACCESS_KEY_ID>`, `AKEXAMPLE`. */
  placeholder: string;
  /** The command whose output holds the value (matched against the line as written). */
  after: RegExp;
  /** The value in that output: the first group. */
  value: RegExp;
}

export interface DocShellOptions {
  /** The reader's home and working folder. */
  home: string;
  /** The environment the commands run in; PATH gains the `s3edge` and `npx` wrappers, HOME is `home`. */
  env: NodeJS.ProcessEnv;
  /** Text a doc shows that stands for something of this run: the address it listens on, above all. */
  replace: [string, string][];
  takes?: Take[];
  /** Variables a doc's reader sets themselves (a password), not set by any line of the doc. */
  given?: Record<string, string>;
}

/** Placeholders that are words are replaced as words: SECRET, not the SECRET in AWS_SECRET_ACCESS_KEY. */
function replacePlaceholder(text: string, placeholder: string, value: string): string {
  if (!/^\w+$/.test(placeholder)) return text.replaceAll(placeholder, value);
  return text.replace(new RegExp(`\\b${placeholder}\\b`, 'g'), () => value);
}

export class DocShell {
  readonly env: NodeJS.ProcessEnv;
  private readonly values = new Map<string, string>();
  /** Variables a line of the doc set (or the reader did): the only ones a line may use. */
  private readonly set = new Set<string>();

  private constructor(private readonly options: DocShellOptions) {
    this.env = { ...options.env, HOME: options.home };
    for (const [name, value] of Object.entries(options.given ?? {})) {
      this.env[name] = value;
      this.set.add(name);
    }
  }

  /** A shell for a reader at `home`, with `s3edge` and `npx s3edge` on PATH running this build. */
  static async create(options: DocShellOptions): Promise<DocShell> {
    const bin = join(options.home, '.doc-bin');
    await mkdir(bin, { recursive: true });
    // Without tap's NODE_OPTIONS (test/helpers/child-env.ts). README's commands say `npx s3edge` (npx gives
    // this build in the folder of `npm ci`, which readme.test checks), the docs' `s3edge` (an installed
    // package or the binary); a doc's other npx command fails here until this file knows how to run it.
    const s3edge = `exec env -u NODE_OPTIONS "${process.execPath}" "${S3EDGE_BIN}" "$@"`;
    await writeFile(join(bin, 's3edge'), `#!/bin/sh\n${s3edge}\n`);
    await writeFile(
      join(bin, 'npx'),
      `#!/bin/sh\nif [ "$1" = s3edge ]; then shift; ${s3edge}; fi\necho "the docs' tests run npx s3edge only, not npx $1" >&2\nexit 127\n`,
    );
    await Promise.all([chmod(join(bin, 's3edge'), 0o755), chmod(join(bin, 'npx'), 0o755)]);
    const shell = new DocShell(options);
    shell.env.PATH = `${bin}:${options.env.PATH ?? ''}`;
    return shell;
  }

  value(placeholder: string): string | undefined {
    return this.values.get(placeholder);
  }

  /** `written` as this run types it, or why it cannot be typed yet (a placeholder nothing filled). */
  private resolve(written: string): { text: string } | { unfilled: string } {
    let text = written;
    for (const [from, to] of this.options.replace) text = text.replaceAll(from, to);
    for (const [placeholder, value] of this.values) text = replacePlaceholder(text, placeholder, value);
    const pending = (this.options.takes ?? []).find((take) => replacePlaceholder(text, take.placeholder, '\0') !== text);
    if (pending) return { unfilled: pending.placeholder };
    const unknown = /<[A-Za-z][^>]*>/.exec(text.replace(/<</g, ''));
    if (unknown) return { unfilled: unknown[0] };
    return { text };
  }

  /** Writes a config file block to the path it names (`~/` is the reader's home). */
  async writeFile(t: Test, where: string, path: string, body: string): Promise<void> {
    const resolved = this.resolve(body);
    if ('unfilled' in resolved) {
      t.fail(`${where}: the placeholder ${resolved.unfilled} has no value from an earlier command`);
      return;
    }
    const file = path.startsWith('~/') ? join(this.options.home, path.slice(2)) : join(this.options.home, path);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, resolved.text);
  }

  /** Runs a script block (python) with its interpreter; passes when it exits 0. */
  async script(t: Test, where: string, interpreter: string, body: string): Promise<RunResult | undefined> {
    const resolved = this.resolve(body);
    if ('unfilled' in resolved) {
      t.fail(`${where}: the placeholder ${resolved.unfilled} has no value from an earlier command`);
      return undefined;
    }
    const r = await run(interpreter, ['-'], { env: this.env, cwd: this.options.home, input: resolved.text, timeoutMs: 60_000 });
    t.equal(r.code, 0, `${where}: ${interpreter} exits 0`, { stdout: r.stdout, stderr: r.stderr });
    return r;
  }

  /** Runs one line as written; passes when it exits 0. */
  async command(t: Test, where: string, written: string, input?: string): Promise<RunResult | undefined> {
    const resolved = this.resolve(written);
    if ('unfilled' in resolved) {
      t.fail(`${where}: ${written}: the placeholder ${resolved.unfilled} has no value from an earlier command`);
      return undefined;
    }
    const command = resolved.text;
    const unset = variablesUsed(command).filter((name) => !this.set.has(name));
    if (unset.length > 0) {
      t.fail(`${where}: ${written}: uses $${unset.join(', $')}, which no earlier line sets`);
      return undefined;
    }
    // `export A=x B=y` and `NAME=$(command)`: run as written, and keep what they set for later lines.
    const assigned = /^export\s+/.test(command)
      ? [...command.matchAll(/\s([A-Z_][A-Z0-9_]*)=/g)].map((m) => m[1] as string)
      : (/^([A-Za-z_][A-Za-z0-9_]*)=\S/.exec(command)?.slice(1, 2) ?? []);
    const opts = { env: this.env, cwd: this.options.home, timeoutMs: 120_000, input };
    if (assigned.length > 0) {
      const shown = assigned.map((name) => `printf '%s\\0' "$${name}"`).join('; ');
      const r = await run('bash', ['-c', `${command} || exit $?\n${shown}`], opts);
      t.equal(r.code, 0, `${where}: ${written}`, { stderr: r.stderr });
      const got = r.stdout.split('\0');
      for (const [i, name] of assigned.entries()) {
        const value = got[i] ?? '';
        t.not(value, '', `${where}: ${written}: sets ${name}`);
        this.env[name] = value;
        this.set.add(name);
      }
      return r;
    }
    const r = await run('bash', ['-c', command], opts);
    t.equal(r.code, 0, `${where}: ${written}`, { stdout: r.stdout, stderr: r.stderr });
    if (/^curl /.test(command) && /\/(api|storage)\//.test(command)) t.match(r.stdout, /"success":true/, `${where}: ${written}: the API says success`, { stdout: r.stdout });
    for (const take of this.options.takes ?? []) {
      if (!take.after.test(written)) continue;
      const value = take.value.exec(r.stdout)?.[1];
      t.ok(value, `${where}: ${written}: prints the value of ${take.placeholder}`);
      if (value) this.values.set(take.placeholder, value);
    }
    return r;
  }
}
