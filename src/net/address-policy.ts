// Which IP addresses a request made on behalf of a user may connect to. Checked on the address a
// socket is about to use (after DNS), so a name that resolves to an internal host, or re-resolves to
// one later (DNS rebinding), is refused all the same. Only addresses on the public internet pass; what
// is public is ip.ts's one classification (the same the CDN's GeoIP and the edge proxy use).
import { classifyAddress, type AddressClass } from './ip.js';

export { classifyAddress, type AddressClass } from './ip.js';

export interface AddressPolicy {
  /** Allow every address (a loopback fixture in tests); never in production. */
  allowPrivateAddresses: boolean;
}

/** Undefined when the policy lets a connection to `address` through, else why not. */
export function refusal(address: string, policy: AddressPolicy): Exclude<AddressClass, 'public'> | undefined {
  const kind = classifyAddress(address);
  if (kind === 'invalid') return kind;
  if (kind === 'public' || policy.allowPrivateAddresses) return undefined;
  return kind;
}

/** A connection the policy refused; `code` lets callers tell it from network failures. */
export class AddressRefusedError extends Error {
  readonly code = 'ERR_ADDRESS_REFUSED';

  constructor(
    readonly host: string,
    readonly address: string,
    readonly kind: Exclude<AddressClass, 'public'>,
  ) {
    super(`refused to connect to ${host} (${address}): ${kind} address`);
    this.name = 'AddressRefusedError';
  }
}
