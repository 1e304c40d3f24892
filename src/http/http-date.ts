// Last-Modified and other HTTP dates (RFC 9110 IMF-fixdate). Formatting one costs a Date and a
// toUTCString per response, which showed in the CDN's small-file profile; the same few timestamps
// (hot objects' modification times) repeat, so their strings are kept.
import { lazyLru } from '../lazy-lru.js';

const formatted = lazyLru<number, string>({ max: 10_000 });

export function httpDate(ms: number): string {
  let s = formatted().get(ms);
  if (s === undefined) {
    s = new Date(ms).toUTCString();
    formatted().set(ms, s);
  }
  return s;
}
