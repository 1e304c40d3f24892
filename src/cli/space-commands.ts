// Admin commands of users' spaces and credits: suspend or resume a space, grant credits (a ledger entry).
import { CreditsService, fromMilli } from '../credits/credits.js';
import { settleTransfer, type SettlementResult } from '../credits/transfer-settlement.js';
import { settleStorage } from '../credits/storage-settlement.js';
import { AdminError, iso, type Command } from './command.js';
import { requireUser } from './lookups.js';

export const SPACE_GROUPS: Readonly<Record<string, { section: string; summary: string }>> = {
  spaces: { section: 'Spaces and credits', summary: "suspend or resume a user's space" },
  credits: { section: 'Spaces and credits', summary: 'grant credits to a user; charge metered transfer now' },
};

function spaceView(space: { id: string; name: string; status: string; suspendedAt: number | null }, user: string) {
  return { user, id: space.id, name: space.name, status: space.status, suspendedAt: space.suspendedAt === null ? null : iso(space.suspendedAt) };
}

/** Credits with at most 3 decimals (milli-credits are the ledger's unit). */
function creditAmount(value: string | undefined): number {
  const v = (value ?? '').trim();
  if (!/^\d{1,12}(\.\d{1,3})?$/.test(v) || Number(v) <= 0) {
    throw new AdminError('InvalidAmount', `--amount must be a positive number of credits with at most 3 decimals (got '${value ?? ''}')`);
  }
  return Number(v);
}

export const SPACE_COMMANDS = {
  spaces: {
    suspend: {
      args: [],
      flags: ['user'],
      required: ['user'],
      summary: "suspend a user's space: uploads are refused and its public assets are no longer served",
      example: 's3edge spaces suspend --user alice',
      run: async ({ repos, flags }) => {
        const user = await requireUser(repos, flags.user as string);
        return spaceView(await repos.spaces.setStatus(user.id, 'suspended'), user.name);
      },
    },
    resume: {
      args: [],
      flags: ['user'],
      required: ['user'],
      summary: "resume a suspended space",
      example: 's3edge spaces resume --user alice',
      run: async ({ repos, flags }) => {
        const user = await requireUser(repos, flags.user as string);
        return spaceView(await repos.spaces.setStatus(user.id, 'active'), user.name);
      },
    },
  },
  credits: {
    settle: {
      args: [],
      flags: [],
      summary: 'charge what is metered now: transfer served to the public (an entry per user and hour) and storage (an entry per user and day, the day under way included)',
      example: 's3edge credits settle',
      run: async ({ repos, config }) => {
        const deps = { repos, config: config.credits, now: () => Date.now() };
        const view = (r: SettlementResult) => ({ entries: r.entries, bytes: r.bytes, credits: fromMilli(r.creditsMilli) });
        return { transfer: view(await settleTransfer(deps, { current: true })), storage: view(await settleStorage(deps, { current: true })) };
      },
    },
    grant: {
      args: [],
      flags: ['user', 'amount'],
      required: ['user', 'amount'],
      summary: 'add credits to a user (a ledger entry)',
      example: 's3edge credits grant --user alice --amount 100',
      run: async ({ repos, config, flags }) => {
        const user = await requireUser(repos, flags.user as string);
        const amount = creditAmount(flags.amount);
        const entry = await repos.transact(async (r) => {
          const credits = new CreditsService(r, config.credits, () => new Date());
          await credits.ensureMonthlyGrant(user.id);
          return credits.grant(user.id, amount, 'granted by an administrator');
        });
        return { user: user.name, entryId: entry.id, credits: amount, balance: fromMilli(entry.balanceAfterMilli), createdAt: iso(entry.createdAt) };
      },
    },
  },
} satisfies Record<string, Record<string, Command>>;
