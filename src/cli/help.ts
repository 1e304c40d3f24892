// `s3edge`, `s3edge --help`, `s3edge help`: every command, grouped, from the tables that run them
// (the admin COMMANDS and GROUPS, and serve), so the list cannot leave a command out.
import { readFileSync } from 'node:fs';
import { adminSections } from './admin.js';

const PACKAGE_JSON = new URL('../../../package.json', import.meta.url);

export function version(): string {
  return (JSON.parse(readFileSync(PACKAGE_JSON, 'utf8')) as { version: string }).version;
}

export function mainHelp(): string {
  const sections: { section: string; lines: [string, string][] }[] = [
    { section: 'Server', lines: [['serve', 'start the gateway: S3 API, management API and CDN (npm start runs it)']] },
    ...adminSections(),
    { section: 'Help', lines: [['help [COMMAND]', "this list, or a command's options and an example"], ['--version', 'the version']] },
  ];
  const width = Math.max(...sections.flatMap((s) => s.lines.map(([name]) => name.length)));
  const out = [`s3edge ${version()}: an S3-compatible storage gateway with a CDN edge cache`, '', 'usage: s3edge <command> [options]'];
  for (const { section, lines } of sections) {
    out.push('', `${section}:`, ...lines.map(([name, summary]) => `  ${name.padEnd(width)}  ${summary}`));
  }
  out.push(
    '',
    "Run 's3edge <command> --help' for a command's options and an example, e.g. 's3edge access-keys --help'.",
    'Admin commands use the same data directory and configuration as the server (--data-dir, --config, S3EDGE_*).',
  );
  return out.join('\n');
}
