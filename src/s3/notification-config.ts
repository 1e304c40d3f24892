// Bucket event notifications (issue 35): a NotificationConfiguration read and checked as S3 checks it,
// written back as GetBucketNotificationConfiguration answers it, and which of its configurations an
// event matches. Pure: the operator's targets come in as a set of ids.
//
// A queue configuration names a target the operator defined (`s3edge notification-targets add ID`) as
// `arn:s3edge:sqs:<region>:<ID>:webhook`; events are s3:ObjectCreated:* and s3:ObjectRemoved:* and their
// sub-types; a filter has at most one prefix and one suffix rule. Topic and Lambda configurations are
// refused by name: a webhook is the one kind of destination here.
import { S3Error } from '../errors/s3-errors.js';
import { childNames, childValues, isNode, leafText, parseXmlDocument, type XmlNode } from './request-body-xml.js';
import type { XmlObject } from './xml.js';
import { NOTIFICATION_EVENTS, type EventName, type NotificationEvent } from '../notifications/event-names.js';

import { covers, matchingConfigurations } from '../notifications/matching.js';

export { NOTIFICATION_EVENTS, matchingConfigurations, type EventName, type NotificationEvent };

export interface QueueConfiguration {
  id: string;
  /** The operator's target id, from the ARN. */
  targetId: string;
  arn: string;
  events: NotificationEvent[];
  prefix: string;
  suffix: string;
}

const invalid = (message: string, extra?: Record<string, string>): S3Error => new S3Error('InvalidArgument', message, extra);
const malformed = (): S3Error => new S3Error('MalformedXML');

function texts(node: XmlNode, name: string): string[] {
  return childValues(node, name).map((v) => leafText(v).trim());
}

function one(node: XmlNode, name: string): string | undefined {
  const values = texts(node, name);
  if (values.length > 1) throw malformed();
  return values[0];
}

/** `arn:s3edge:sqs:<region>:<ID>:webhook` -> ID, when the region is ours. */
export function targetIdOf(arn: string, region: string): string | undefined {
  const m = /^arn:s3edge:sqs:([^:]*):([A-Za-z0-9_-]{1,64}):webhook$/.exec(arn);
  return m && m[1] === region ? m[2] : undefined;
}

function filterOf(node: XmlNode): { prefix: string; suffix: string } {
  const filter = childValues(node, 'Filter');
  if (filter.length === 0) return { prefix: '', suffix: '' };
  const f = filter.length === 1 && isNode(filter[0]) ? filter[0] : undefined;
  if (!f || childNames(f).some((n) => n !== 'S3Key')) throw malformed();
  const keys = childValues(f, 'S3Key');
  const k = keys.length === 1 && isNode(keys[0]) ? keys[0] : undefined;
  if (!k || childNames(k).some((n) => n !== 'FilterRule')) throw malformed();
  const out = { prefix: '', suffix: '' };
  const seen = new Set<string>();
  for (const rule of childValues(k, 'FilterRule')) {
    if (!isNode(rule) || childNames(rule).some((n) => n !== 'Name' && n !== 'Value')) throw malformed();
    const name = (one(rule, 'Name') ?? '').toLowerCase();
    const value = childValues(rule, 'Value').length === 1 ? leafText(childValues(rule, 'Value')[0]) : undefined;
    if (name !== 'prefix' && name !== 'suffix') throw invalid('filter rule name must be either prefix or suffix', { ArgumentName: 'FilterRule', ArgumentValue: name });
    if (value === undefined) throw malformed();
    if (seen.has(name)) throw invalid(`Cannot specify more than one ${name} rule in a filter.`, { ArgumentName: 'FilterRule', ArgumentValue: name });
    seen.add(name);
    out[name] = value;
  }
  return out;
}

/** Whether two configurations could both take one event: a shared event type and keys both filters take. */
function overlaps(a: QueueConfiguration, b: QueueConfiguration): boolean {
  const shared = a.events.some((x) => b.events.some((y) => x === y || covers(x, y) || covers(y, x)));
  if (!shared) return false;
  const prefixes = a.prefix.startsWith(b.prefix) || b.prefix.startsWith(a.prefix);
  const suffixes = a.suffix.endsWith(b.suffix) || b.suffix.endsWith(a.suffix);
  return prefixes && suffixes;
}

/**
 * Parses and checks a `<NotificationConfiguration>` for a bucket in `region`; `targets` are the ids
 * the operator defined. An empty document removes every configuration, as on S3.
 */
export function parseNotificationConfiguration(body: Buffer, region: string, targets: ReadonlySet<string>, newId: () => string): QueueConfiguration[] {
  const root = parseXmlDocument(body, 'NotificationConfiguration');
  for (const name of childNames(root)) {
    if (name === 'TopicConfiguration' || name === 'CloudFunctionConfiguration' || name === 'EventBridgeConfiguration') {
      throw invalid(`${name} is not supported: define a webhook target (s3edge notification-targets add) and name it in a QueueConfiguration`);
    }
    if (name !== 'QueueConfiguration') throw malformed();
  }
  const configs = childValues(root, 'QueueConfiguration').map((c): QueueConfiguration => {
    if (!isNode(c) || childNames(c).some((n) => !['Id', 'Queue', 'Event', 'Filter'].includes(n))) throw malformed();
    const arn = one(c, 'Queue');
    if (!arn) throw malformed();
    const targetId = targetIdOf(arn, region);
    if (targetId === undefined || !targets.has(targetId)) {
      throw invalid(`Unable to validate the following destination configurations: ${arn} (expected arn:s3edge:sqs:${region}:<target id>:webhook naming a target from s3edge notification-targets list)`, { ArgumentName: arn, ArgumentValue: 'The destination does not exist' });
    }
    const events = texts(c, 'Event');
    if (events.length === 0) throw malformed();
    for (const e of events) if (!(NOTIFICATION_EVENTS as readonly string[]).includes(e)) throw invalid('The event is not supported for notifications', { ArgumentName: e, ArgumentValue: e });
    return { id: one(c, 'Id') || newId(), targetId, arn, events: [...new Set(events)] as NotificationEvent[], ...filterOf(c) };
  });
  if (new Set(configs.map((c) => c.id)).size !== configs.length) throw invalid('Configuration Ids must be unique.');
  for (let i = 0; i < configs.length; i++) {
    for (let j = i + 1; j < configs.length; j++) {
      if (overlaps(configs[i]!, configs[j]!)) throw invalid('Configurations overlap. Configurations on the same bucket cannot share a common event type.');
    }
  }
  return configs;
}

/** The body of `<NotificationConfiguration>` as GetBucketNotificationConfiguration answers. */
export function notificationXml(configs: readonly QueueConfiguration[]): XmlObject {
  return {
    QueueConfiguration: configs.map((c) => ({
      Id: c.id,
      Queue: c.arn,
      Event: c.events,
      ...(c.prefix || c.suffix
        ? {
            Filter: {
              S3Key: {
                FilterRule: [...(c.prefix ? [{ Name: 'Prefix', Value: c.prefix }] : []), ...(c.suffix ? [{ Name: 'Suffix', Value: c.suffix }] : [])],
              },
            },
          }
        : {}),
    })),
  };
}
