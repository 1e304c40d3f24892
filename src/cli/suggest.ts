// "Did you mean ...?" for mistyped commands and options: the closest known word by edit distance.

/** Levenshtein distance (insert, delete, substitute), two rows at a time. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row.push(Math.min((prev[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost));
    }
    prev = row;
  }
  return prev[b.length] ?? 0;
}

/**
 * The candidate closest to `input`, if it is close enough to be what was meant: within a third of
 * the word's length (at least 2 edits), or a word that starts with it (`acc` -> `access-keys`).
 */
export function closest(input: string, candidates: Iterable<string>): string | undefined {
  const word = input.toLowerCase();
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(word, candidate.toLowerCase());
    if (!best || distance < best.distance) best = { candidate, distance };
  }
  if (!best) return undefined;
  if (best.distance <= Math.max(2, Math.floor(word.length / 3))) return best.candidate;
  const prefixed = [...candidates].filter((c) => word.length >= 2 && c.toLowerCase().startsWith(word));
  return prefixed.length === 1 ? prefixed[0] : undefined;
}

/** ` Did you mean 'x'?`, or nothing when no candidate is close. */
export function didYouMean(input: string, candidates: Iterable<string>, render: (c: string) => string = (c) => c): string {
  const match = closest(input, candidates);
  return match === undefined ? '' : ` Did you mean '${render(match)}'?`;
}

/** The first option in argv (`--name`, `--name=value`, `-x`) that none of `known` is, if any. */
export function unknownOption(argv: readonly string[], known: Iterable<string>): string | undefined {
  const names = new Set(known);
  for (const arg of argv) {
    if (arg === '--') return undefined;
    if (arg === '-h' || !arg.startsWith('-') || arg === '-') continue;
    const name = arg.replace(/^--?/, '').split('=')[0] ?? '';
    if (!names.has(name)) return name;
  }
  return undefined;
}

/**
 * `--name -5` -> `--name=-5` for every option that takes a value: a value that starts with one dash
 * (a negative number, `-1GiB`) is the option's value, never an option of its own, so validation can
 * name the setting it is wrong for. A `--word` or `-h` after it is still an option (a forgotten value).
 */
export function attachDashValues(argv: readonly string[], takesValue: Iterable<string>): string[] {
  const valued = new Set(takesValue);
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') {
      out.push(...argv.slice(i));
      break;
    }
    const next = argv[i + 1];
    const isValued = arg.startsWith('--') && !arg.includes('=') && valued.has(arg.slice(2));
    if (isValued && next !== undefined && /^-[^-]/.test(next) && next !== '-h') {
      out.push(`${arg}=${next}`);
      i++;
    } else {
      out.push(arg);
    }
  }
  return out;
}
