// undici, loaded when first used rather than when the server starts (it is about a hundred modules, and
// most servers proxy nothing, or not at once). A synchronous require: the callers hand out pools and
// connectors synchronously. The ES module import of 'undici' elsewhere finds the same instance.
import { createRequire } from 'node:module';

type Undici = typeof import('undici');

let loaded: Undici | undefined;

export function undici(): Undici {
  return (loaded ??= createRequire(import.meta.url)('undici') as Undici);
}
