// The Refusal a call is expected to reject with (credits, quotas): anything else, or no rejection, fails the test.
import { Refusal } from '../../src/errors/refusal.js';

export async function refusalOf(p: Promise<unknown>): Promise<Refusal> {
  try {
    await p;
  } catch (err) {
    if (err instanceof Refusal) return err;
    throw err;
  }
  throw new Error('expected a Refusal');
}
