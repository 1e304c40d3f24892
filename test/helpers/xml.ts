// Minimal, exact XML reading for S3 responses: element text with the five entities and numeric
// character references decoded, nothing trimmed or coerced (object keys may have spaces or digits).

export function decodeXmlText(s: string): string {
  return s.replace(/&(lt|gt|amp|quot|apos|#\d+|#x[0-9a-fA-F]+);/g, (_m, ent: string) => {
    switch (ent) {
      case 'lt':
        return '<';
      case 'gt':
        return '>';
      case 'amp':
        return '&';
      case 'quot':
        return '"';
      case 'apos':
        return "'";
      default:
        return String.fromCodePoint(ent.startsWith('#x') ? parseInt(ent.slice(2), 16) : parseInt(ent.slice(1), 10));
    }
  });
}

/** Inner XML of every `<tag>...</tag>` (not nested in another of the same name). */
export function xmlBlocks(xml: string, tag: string): string[] {
  const re = new RegExp(`<${tag}(?:\\s[^>]*)?>([\\s\\S]*?)</${tag}>|<${tag}(?:\\s[^>]*)?/>`, 'g');
  const out: string[] = [];
  for (const m of xml.matchAll(re)) out.push(m[1] ?? '');
  return out;
}

/** Decoded text of every `<tag>`. */
export function xmlTexts(xml: string, tag: string): string[] {
  return xmlBlocks(xml, tag).map(decodeXmlText);
}

export function xmlText(xml: string, tag: string): string | undefined {
  return xmlTexts(xml, tag)[0];
}

export interface S3ErrorBody {
  code: string | undefined;
  message: string | undefined;
  requestId: string | undefined;
}

export function parseS3Error(body: string): S3ErrorBody {
  const inner = xmlBlocks(body, 'Error')[0] ?? '';
  return { code: xmlText(inner, 'Code'), message: xmlText(inner, 'Message'), requestId: xmlText(inner, 'RequestId') };
}

export interface ListV2Result {
  keys: string[];
  commonPrefixes: string[];
  isTruncated: boolean;
  nextContinuationToken: string | undefined;
  keyCount: number | undefined;
}

export function parseListObjectsV2(body: string): ListV2Result {
  const root = xmlBlocks(body, 'ListBucketResult')[0] ?? '';
  const keyCount = xmlText(root, 'KeyCount');
  return {
    keys: xmlBlocks(root, 'Contents').map((c) => xmlText(c, 'Key') ?? ''),
    commonPrefixes: xmlBlocks(root, 'CommonPrefixes').map((c) => xmlText(c, 'Prefix') ?? ''),
    isTruncated: xmlText(root, 'IsTruncated') === 'true',
    nextContinuationToken: xmlText(root, 'NextContinuationToken'),
    keyCount: keyCount === undefined ? undefined : Number(keyCount),
  };
}
