// One certificate from the operator's ACME CA (RFC 8555) for one hostname, by HTTP-01: acme-client runs
// the account, the order, its authorization and the finalisation; the challenge's answer is written to
// acme_challenges, where every gateway process answers it on its plain HTTP listener (edge/handler.ts),
// whichever the CA reaches. Every request to the CA goes through the outbound address policy (public
// addresses only unless acme.allowPrivateAddresses) with acme.timeoutMs. The account key is made once,
// sealed with the master key in the settings table, and made again only for another directory.
// acme-client (and its axios) is loaded on the first issuance: a server without ACME never loads it.
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { AcmeConfig } from '../config/schema.js';
import type { Repos } from '../db/repos/index.js';
import { decryptSecret, encryptSecret } from '../auth/secrets.js';
import { guardedAgents } from '../net/guarded-connector.js';

/** The settings row holding the ACME account. */
const ACCOUNT_SETTING = 'acme.account';
/** How long a challenge's answer is served (the CA validates within seconds to minutes). */
const CHALLENGE_TTL_MS = 10 * 60_000;
/** Largest answer read from the CA (a certificate chain is a few kB). */
const MAX_ANSWER_BYTES = 1024 * 1024;
/** A reason recorded and shown is cut to this many characters. */
const MAX_REASON = 500;

interface StoredAccount {
  directory: string;
  email: string;
  keyEnc: string;
  url: string | null;
}

export interface AcmeIssuerDeps {
  config: AcmeConfig;
  repos: Pick<Repos, 'settings' | 'hostnameTls'>;
  masterKey: Buffer;
  now: () => number;
  log: Logger;
}

export interface IssuedChain {
  /** Leaf first, then the chain, as the CA sent it. */
  chainPem: string;
  keyPem: string;
}

/** A failure of an issuance, with the CA's or the network's reason in words. */
export class IssuanceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'IssuanceError';
  }
}

type AcmeModule = typeof import('acme-client');

/** The reason of a failed ACME exchange as one line a user can act on (no stack, no internal path). */
export function issuanceReason(err: unknown): string {
  const e = err as { message?: unknown; code?: unknown; response?: { status?: unknown } };
  let message = typeof e.message === 'string' && e.message !== '' ? e.message : String(err);
  if (e.code === 'ECONNREFUSED' || e.code === 'ENOTFOUND' || e.code === 'ETIMEDOUT' || e.code === 'ECONNABORTED') {
    message = `The ACME directory could not be reached (${String(e.code)}): ${message}`;
  }
  return message.replace(/\s+/g, ' ').trim().slice(0, MAX_REASON);
}

export class AcmeIssuer {
  private account: { key: Buffer; url: string | null } | undefined;

  constructor(private readonly deps: AcmeIssuerDeps) {}

  private module: Promise<AcmeModule> | undefined;

  /** acme-client, loaded once, its axios instance dialling through the address policy. */
  private acme(): Promise<AcmeModule> {
    this.module ??= import('acme-client').then((m) => {
      const acme = ((m as unknown as { default?: AcmeModule }).default ?? m) as AcmeModule;
      const { config } = this.deps;
      const ca = config.caFile === '' ? undefined : readFileSync(config.caFile);
      const agents = guardedAgents({ allowPrivateAddresses: config.allowPrivateAddresses }, ca ? { ca } : {});
      acme.axios.defaults.httpsAgent = agents.https;
      acme.axios.defaults.httpAgent = agents.http;
      acme.axios.defaults.timeout = config.timeoutMs;
      acme.axios.defaults.maxContentLength = MAX_ANSWER_BYTES;
      acme.axios.defaults.maxRedirects = 0;
      return acme;
    });
    return this.module;
  }

  /** The account key (made and stored on first use, or for another directory or e-mail). */
  private async accountKey(acme: AcmeModule): Promise<{ key: Buffer; url: string | null }> {
    if (this.account) return this.account;
    const { config, repos, masterKey } = this.deps;
    const raw = await repos.settings.get(ACCOUNT_SETTING);
    const stored = raw === undefined ? undefined : (JSON.parse(raw) as StoredAccount);
    if (stored && stored.directory === config.directory && stored.email === config.email) {
      this.account = { key: Buffer.from(decryptSecret(masterKey, stored.keyEnc)), url: stored.url };
      return this.account;
    }
    const key = await acme.crypto.createPrivateEcdsaKey();
    this.account = { key, url: null };
    await this.saveAccount(this.account);
    return this.account;
  }

  private async rememberAccountUrl(url: string): Promise<void> {
    if (!this.account || this.account.url === url) return;
    this.account.url = url;
    await this.saveAccount(this.account);
  }

  /** The account as the settings hold it: for this directory and e-mail, its key sealed. */
  private async saveAccount(account: { key: Buffer; url: string | null }): Promise<void> {
    const { config, repos, masterKey } = this.deps;
    const record: StoredAccount = { directory: config.directory, email: config.email, keyEnc: encryptSecret(masterKey, account.key.toString()), url: account.url };
    await repos.settings.set(ACCOUNT_SETTING, JSON.stringify(record));
  }

  /** Orders a certificate for `hostname`; IssuanceError with the reason when the CA does not issue one. */
  async issue(hostname: string): Promise<IssuedChain> {
    const { repos, now, config, log } = this.deps;
    let acme: AcmeModule;
    try {
      acme = await this.acme();
    } catch (err) {
      throw new IssuanceError(`ACME is not usable on this server: ${issuanceReason(err)} (check acme.caFile)`);
    }
    const account = await this.accountKey(acme);
    // Polls of the order and authorization from half a second, backing off to ten (acme-client's own start at 5 s).
    const client = new acme.Client({
      directoryUrl: config.directory,
      accountKey: account.key,
      backoffMin: 500,
      backoffMax: 10_000,
      ...(account.url ? { accountUrl: account.url } : {}),
    });
    const privateKey = await acme.crypto.createPrivateEcdsaKey();
    const [, csr] = await acme.crypto.createCsr({ commonName: hostname, altNames: [hostname] }, privateKey);
    const tokens: string[] = [];
    try {
      const chainPem = await client.auto({
        csr,
        ...(config.email ? { email: config.email } : {}),
        termsOfServiceAgreed: true,
        challengePriority: ['http-01'],
        // acme-client's own check fetches the hostname from here, through the system's resolver: the
        // CA's validation is the one that counts.
        skipChallengeVerification: true,
        challengeCreateFn: async (_authz, challenge, keyAuthorization) => {
          if (challenge.type !== 'http-01') throw new Error(`only http-01 is answered, not ${challenge.type}`);
          tokens.push(challenge.token);
          await repos.hostnameTls.putChallenge(challenge.token, hostname, keyAuthorization, now() + CHALLENGE_TTL_MS);
        },
        challengeRemoveFn: async (_authz, challenge) => {
          await repos.hostnameTls.deleteChallenge(challenge.token);
        },
      });
      await this.rememberAccountUrl(client.getAccountUrl()).catch((err: unknown) => log.warn({ err }, 'acme: could not store the account URL'));
      return { chainPem, keyPem: privateKey.toString() };
    } catch (err) {
      throw new IssuanceError(issuanceReason(err));
    } finally {
      for (const token of tokens) await repos.hostnameTls.deleteChallenge(token).catch(() => undefined);
    }
  }
}
