// A service's refusal of what a user asked (an upload's bad form, a file over the limit, a suspended space,
// too few credits, a storage quota), in words for that user: services throw it and know nothing of HTTP; each surface maps
// `kind` to its own answer (the management API: api/plugin.ts, a status and the JSON envelope with `code`).
// projects/errors.ts is the same pattern for project changes.

export type RefusalKind =
  /** Bad input: the message names the field. */
  | 'invalid'
  /** More bytes than a limit allows. */
  | 'too_large'
  /** The user's space is suspended by an administrator. */
  | 'suspended'
  /** Not enough credits; `extra` says how many were needed and what the balance is. */
  | 'insufficient_credits'
  /** A user's or a bucket's storage quota would be passed; `extra` says which, its size, what is stored and what was needed. */
  | 'quota_exceeded';

export class Refusal extends Error {
  override name = 'Refusal';

  constructor(
    readonly kind: RefusalKind,
    /** Machine-readable, for the API's `code`: `invalid_request`, `payload_too_large`, ... */
    readonly code: string,
    message: string,
    /** Figures the user needs to act on it (requiredCredits and balance), shown beside the message. */
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export function invalidInput(message: string): Refusal {
  return new Refusal('invalid', 'invalid_request', message);
}
