// Which of a bucket's notification configurations an event is sent by: its type taken (a family's `*`
// covers its sub-types), the key within the prefix and suffix. Pure.
import type { EventName } from './event-names.js';

export interface EventFilter {
  events: readonly string[];
  prefix: string;
  suffix: string;
}

/** Whether a configured event type (`s3:ObjectCreated:*` or one sub-type) takes `event`. */
export function covers(pattern: string, event: string): boolean {
  return pattern.endsWith(':*') ? event.startsWith(pattern.slice(0, -1)) : pattern === event;
}

/** The configurations an event on `key` is sent by. */
export function matchingConfigurations<C extends EventFilter>(configs: readonly C[], event: EventName, key: string): C[] {
  return configs.filter((c) => c.events.some((e) => covers(e, event)) && key.startsWith(c.prefix) && key.endsWith(c.suffix));
}
