// `s3edge`, `s3edge --help`, `s3edge help`: every command, grouped, from the tables that run them
// (the admin COMMANDS and GROUPS, and serve), so the list cannot leave a command out.
import { adminSections } from './admin.js';
import { version } from './version.js';

function sections(): { section: string; lines: [string, string][] }[] {
  return [
    { section: 'Server', lines: [['serve', 'start the gateway: S3 API, management API and CDN (npm start runs it)']] },
    ...adminSections(),
    { section: 'Help', lines: [['help [COMMAND]', "this list, or a command's options and an example"], ['--version', 'the version and the commit it was built from']] },
  ];
}

export function mainHelp(): string {
  const all = sections();
  const width = Math.max(...all.flatMap((s) => s.lines.map(([name]) => name.length)));
  const out = [`s3edge ${version()}: an S3-compatible storage gateway with a CDN edge cache`, '', 'usage: s3edge <command> [options]'];
  for (const { section, lines } of all) {
    out.push('', `${section}:`, ...lines.map(([name, summary]) => `  ${name.padEnd(width)}  ${summary}`));
  }
  out.push(
    '',
    "Run 's3edge <command> --help' for a command's options and an example, e.g. 's3edge access-keys --help'.",
    'Admin commands use the same data directory and configuration as the server (--data-dir, --config, S3EDGE_*).',
  );
  return out.join('\n');
}

/** `s3edge --help --json`: the same list as one JSON object. */
export function mainHelpJson(): { version: string; usage: string; commands: { section: string; command: string; summary: string }[] } {
  return {
    version: version(),
    usage: 's3edge <command> [options]',
    commands: sections().flatMap(({ section, lines }) => lines.map(([command, summary]) => ({ section, command, summary }))),
  };
}
