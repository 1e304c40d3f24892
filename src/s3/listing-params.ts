// The request parameters of the listings (ListObjects, ListObjectsV2, ListMultipartUploads) that are
// echoed in their XML answers. A prefix, delimiter or marker holding a character XML 1.0 cannot carry
// (src/s3/xml.ts: C0 controls but tab/LF/CR, U+FFFE/U+FFFF) cannot be echoed in well-formed XML. No
// key can contain one (such keys are refused when written), so such a listing matches nothing new:
// with encoding-type=url it is honoured and echoed URL-encoded, as AWS does; without it, it is 400
// InvalidArgument naming the parameter, where AWS would answer XML no client can parse
// (docs/COMPATIBILITY.md "Keys are opaque").
import { S3Error } from '../errors/s3-errors.js';
import type { S3Request } from './operation.js';
import { hasNonXmlChar } from './xml.js';

/** encoding-type: identity when absent, URL-encoding for `url`, else InvalidArgument. */
export function encodingOf(r: S3Request): (s: string) => string {
  const type = r.addr.query.get('encoding-type');
  if (type === undefined || type === '') return (s) => s;
  if (type !== 'url') throw new S3Error('InvalidArgument', 'Invalid Encoding Method specified in Request', { ArgumentName: 'encoding-type', ArgumentValue: type });
  // Clients decode with unquote_plus / url.QueryUnescape: '+' and space must both be escaped.
  return (s) => encodeURIComponent(s).replace(/%2F/g, '/');
}

/**
 * A listing parameter ('' when absent). One holding a character XML cannot carry is refused unless
 * the answer URL-encodes it: encoding-type=url, for a parameter AWS encodes (`urlEncodable`; upload
 * and version id markers are echoed as sent, and no id holds such a character).
 */
export function listParam(r: S3Request, name: string, urlEncodable = true): string {
  const value = r.addr.query.get(name) ?? '';
  if (!hasNonXmlChar(value)) return value;
  const asUrl = r.addr.query.get('encoding-type') === 'url';
  if (urlEncodable && asUrl) return value;
  const hint = urlEncodable ? '; list with encoding-type=url to use it' : '';
  throw new S3Error('InvalidArgument', `The ${name} parameter contains a control character XML 1.0 cannot carry${hint}.`, { ArgumentName: name });
}
