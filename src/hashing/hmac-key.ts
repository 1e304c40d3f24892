// HMAC keys as KeyObjects, one per key's own object. Node 24's createHmac makes a KeyObject of a
// Buffer key on every call (~11 µs in isolation, more than the HMAC); with one made once a call costs
// ~2 µs. For keys that are made once and signed with many times: a SigV4 signing key out of a cache
// (ours, or smithy's for the upstream store). The bytes of a key handed here must not change.
import { createSecretKey, type KeyObject } from 'node:crypto';

const keyObjects = new WeakMap<ArrayBufferView | ArrayBuffer, KeyObject>();

export function hmacKeyOf(bytes: ArrayBufferView | ArrayBuffer): KeyObject {
  let key = keyObjects.get(bytes);
  if (key === undefined) {
    key = createSecretKey(ArrayBuffer.isView(bytes) ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) : new Uint8Array(bytes));
    keyObjects.set(bytes, key);
  }
  return key;
}
