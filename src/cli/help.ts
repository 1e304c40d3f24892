// `s3edge`, `s3edge --help`, `s3edge help`: every command, grouped, from the tables that run them
// (the admin COMMANDS and GROUPS, and serve), so the list cannot leave a command out; and an admin
// group's or command's help (`s3edge users --help`, `s3edge users create --help`).
import { COMMAND_FLAGS, COMMANDS, GROUPS } from './commands.js';
import type { Command } from './command.js';
import { DOMAIN_FLAGS } from './domain-commands.js';
import { PROJECT_FLAGS } from './project-commands.js';
import { METADATA_FLAGS } from './metadata-commands.js';
import { LIFECYCLE_FLAGS } from './lifecycle-commands.js';
import { NOTIFICATION_FLAGS } from './notification-commands.js';
import { version } from './version.js';

function synopsis(group: string, action: string, cmd: Command): string {
  const flags = cmd.flags.map((f) => {
    if (COMMAND_FLAGS[f as keyof typeof COMMAND_FLAGS]?.type === 'boolean') return `[--${f}]`;
    const value = DOMAIN_FLAGS[f] ?? PROJECT_FLAGS[f]?.value ?? METADATA_FLAGS[f]?.value ?? LIFECYCLE_FLAGS[f]?.value ?? NOTIFICATION_FLAGS[f]?.value ?? (f === 'permission' ? 'read|read_write' : f === 'name' ? 'LABEL' : f === 'scopes' ? 'a,b' : f === 'amount' ? 'N' : 'NAME');
    const text = `--${f} ${value}`;
    return cmd.required?.includes(f) ? text : `[${text}]`;
  });
  return ['s3edge', group, action, ...cmd.args, ...flags].join(' ');
}

const COMMON_HELP = [
  'common options: --json (machine-readable output), --data-dir DIR, --config FILE, and every',
  "'s3edge serve' option (--region, --public-url, --master-key, ...); S3EDGE_* environment variables apply too.",
  'Admin commands work on the data directory directly, also while the server runs (but for metadata copy).',
];

/** A group's help (`s3edge users --help`), or one command's (`s3edge users create --help`): synopsis, what it does, an example. */
export function usage(group: string, action?: string): string {
  const actions = COMMANDS[group] ?? {};
  const chosen = action !== undefined && actions[action] ? [[action, actions[action]] as const] : Object.entries(actions);
  const lines = [`usage:`];
  for (const [name, cmd] of chosen) lines.push(`  ${synopsis(group, name, cmd)}`, `      ${cmd.summary}`, `      example: ${cmd.example}`, '');
  lines.push(...COMMON_HELP);
  return lines.join('\n');
}

/** The admin part of `s3edge --help`: sections, then one line per group with its actions. */
function adminSections(): { section: string; lines: [string, string][] }[] {
  const sections: { section: string; lines: [string, string][] }[] = [];
  for (const [group, meta] of Object.entries(GROUPS)) {
    let section = sections.find((s) => s.section === meta.section);
    if (!section) sections.push((section = { section: meta.section, lines: [] }));
    section.lines.push([`${group} ${Object.keys(COMMANDS[group] ?? {}).join('|')}`, meta.summary]);
  }
  return sections;
}

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
