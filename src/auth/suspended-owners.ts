// Whether a user's space is suspended, as the doors that serve its content without a login (the CDN,
// a project hostname's bucket site) must know on every request: kept for up to a second per user.
import { lazyLru } from '../lazy-lru.js';
import type { Repos } from '../db/repos/index.js';

export class SuspendedOwners {
  private readonly answers = lazyLru<string, boolean>({ max: 10_000, ttl: 1000, ttlAutopurge: false });

  constructor(private readonly repos: Pick<Repos, 'spaces'>) {}

  /**
   * Suspension comes from the admin CLI, another process, which nothing here hears of, so it takes
   * effect within a second, as a key deleted with the CLI reaches S3. The row read was 10% of a 4 KiB
   * CDN GET.
   */
  /** The answer held now, or undefined (not held: has() reads it). */
  held(userId: string): boolean | undefined {
    return this.answers().get(userId);
  }

  async has(userId: string): Promise<boolean> {
    let answer = this.answers().get(userId);
    if (answer === undefined) {
      answer = (await this.repos.spaces.get(userId))?.status === 'suspended';
      this.answers().set(userId, answer);
    }
    return answer;
  }
}
