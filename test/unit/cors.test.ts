// CORSConfiguration validation and rule matching (first matching rule wins, one '*' per pattern).
import t from 'tap';
import { corsConfigurationXml, matchActual, matchPreflight, parseCorsConfiguration, requestedHeaders, wildcardMatch } from '../../src/s3/cors.js';
import { toXml } from '../../src/s3/xml.js';

function config(rules: string): Buffer {
  return Buffer.from(`<?xml version="1.0" encoding="UTF-8"?>\n<CORSConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${rules}</CORSConfiguration>`);
}

const RULES = config(`
  <CORSRule>
    <ID>uploads</ID>
    <AllowedOrigin>https://app.example.com</AllowedOrigin>
    <AllowedOrigin>https://*.example.org</AllowedOrigin>
    <AllowedMethod>PUT</AllowedMethod>
    <AllowedMethod>POST</AllowedMethod>
    <AllowedHeader>content-*</AllowedHeader>
    <AllowedHeader>X-Amz-Date</AllowedHeader>
    <ExposeHeader>ETag</ExposeHeader>
    <MaxAgeSeconds>3000</MaxAgeSeconds>
  </CORSRule>
  <CORSRule>
    <AllowedOrigin>*</AllowedOrigin>
    <AllowedMethod>GET</AllowedMethod>
    <AllowedMethod>HEAD</AllowedMethod>
    <AllowedHeader>*</AllowedHeader>
  </CORSRule>`);

t.test('parse a valid configuration', async (t) => {
  const rules = parseCorsConfiguration(RULES);
  t.same(rules, [
    {
      id: 'uploads',
      allowedOrigins: ['https://app.example.com', 'https://*.example.org'],
      allowedMethods: ['PUT', 'POST'],
      allowedHeaders: ['content-*', 'X-Amz-Date'],
      exposeHeaders: ['ETag'],
      maxAgeSeconds: 3000,
    },
    { allowedOrigins: ['*'], allowedMethods: ['GET', 'HEAD'], allowedHeaders: ['*'], exposeHeaders: [] },
  ]);
  const xml = toXml('CORSConfiguration', corsConfigurationXml(rules));
  t.same(parseCorsConfiguration(Buffer.from(xml)), rules, 'GetBucketCors output parses back to the same rules');
  t.match(xml, '<ExposeHeader>ETag</ExposeHeader>');
});

t.test('validation', async (t) => {
  const rule = (inner: string) => config(`<CORSRule>${inner}</CORSRule>`);
  const ok = '<AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>';
  t.doesNotThrow(() => parseCorsConfiguration(rule(ok)));
  const cases: Array<[string, Buffer, string]> = [
    ['no rules', config(''), 'MalformedXML'],
    ['not XML', Buffer.from('<CORSConfiguration><CORSRule>'), 'MalformedXML'],
    ['wrong root', Buffer.from('<Cors><CORSRule>' + ok + '</CORSRule></Cors>'), 'MalformedXML'],
    ['no origin', rule('<AllowedMethod>GET</AllowedMethod>'), 'MalformedXML'],
    ['no method', rule('<AllowedOrigin>*</AllowedOrigin>'), 'MalformedXML'],
    ['unknown element', rule(ok + '<Bogus>1</Bogus>'), 'MalformedXML'],
    ['empty origin', rule('<AllowedOrigin></AllowedOrigin><AllowedMethod>GET</AllowedMethod>'), 'MalformedXML'],
    ['bad method', rule('<AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH</AllowedMethod>'), 'InvalidRequest'],
    ['lower-case method', rule('<AllowedOrigin>*</AllowedOrigin><AllowedMethod>get</AllowedMethod>'), 'InvalidRequest'],
    ['two wildcards in an origin', rule('<AllowedOrigin>https://*.*.com</AllowedOrigin><AllowedMethod>GET</AllowedMethod>'), 'InvalidRequest'],
    ['two wildcards in a header', rule(ok + '<AllowedHeader>x-*-*</AllowedHeader>'), 'InvalidRequest'],
    ['wildcard expose header', rule(ok + '<ExposeHeader>*</ExposeHeader>'), 'InvalidRequest'],
    ['max age not a number', rule(ok + '<MaxAgeSeconds>soon</MaxAgeSeconds>'), 'MalformedXML'],
    ['max age negative', rule(ok + '<MaxAgeSeconds>-1</MaxAgeSeconds>'), 'MalformedXML'],
    ['two max ages', rule(ok + '<MaxAgeSeconds>1</MaxAgeSeconds><MaxAgeSeconds>2</MaxAgeSeconds>'), 'MalformedXML'],
    ['ID too long', rule(ok + `<ID>${'x'.repeat(256)}</ID>`), 'InvalidArgument'],
    ['101 rules', config(`<CORSRule>${ok}</CORSRule>`.repeat(101)), 'InvalidRequest'],
    ['DOCTYPE', Buffer.from(`<!DOCTYPE x [<!ENTITY a "b">]><CORSConfiguration><CORSRule>${ok}</CORSRule></CORSConfiguration>`), 'MalformedXML'],
  ];
  for (const [what, body, code] of cases) t.throws(() => parseCorsConfiguration(body), { code }, what);
  t.equal(parseCorsConfiguration(config(`<CORSRule>${ok}</CORSRule>`.repeat(100))).length, 100, '100 rules are fine');
});

t.test('wildcards', async (t) => {
  t.ok(wildcardMatch('*', 'https://anything'));
  t.ok(wildcardMatch('https://*.example.org', 'https://a.b.example.org'));
  t.notOk(wildcardMatch('https://*.example.org', 'https://example.org'), 'the wildcard needs its dot');
  t.notOk(wildcardMatch('https://*.example.org', 'http://a.example.org'));
  t.ok(wildcardMatch('x-amz-*', 'x-amz-date'));
  t.ok(wildcardMatch('x-amz-*', 'x-amz-'), 'the wildcard may match nothing');
  t.notOk(wildcardMatch('ab*ba', 'aba'), 'head and tail may not overlap');
  t.ok(wildcardMatch('exact', 'exact'));
  t.notOk(wildcardMatch('exact', 'exactly'));
});

t.test('matching', async (t) => {
  const rules = parseCorsConfiguration(RULES);
  const [uploads, anyGet] = rules;
  t.equal(matchPreflight(rules, 'https://app.example.com', 'PUT', ['content-type', 'x-amz-date']), uploads, 'headers matched case-insensitively');
  t.equal(matchPreflight(rules, 'https://cdn.example.org', 'POST', []), uploads, 'wildcard origin');
  t.equal(matchPreflight(rules, 'https://app.example.com', 'PUT', ['x-amz-meta-a']), undefined, 'header not allowed');
  t.equal(matchPreflight(rules, 'https://app.example.com', 'DELETE', []), undefined, 'method not allowed');
  t.equal(matchPreflight(rules, 'https://evil.example.com', 'PUT', []), undefined, 'origin not allowed');
  t.equal(matchPreflight(rules, 'https://evil.example.com', 'GET', ['authorization', 'x-anything']), anyGet, 'second rule: any origin, any header');
  t.equal(matchPreflight(rules, 'https://app.example.com', 'GET', []), anyGet, 'first rule lacks GET: falls through');
  t.equal(matchPreflight(rules, 'https://app.example.com', 'get', []), undefined, 'methods are case-sensitive');
  t.equal(matchActual(rules, 'https://app.example.com', 'PUT'), uploads);
  t.equal(matchActual(rules, 'https://x.test', 'HEAD'), anyGet);
  t.equal(matchActual(rules, 'https://x.test', 'DELETE'), undefined);
  t.same(requestedHeaders(' Content-Type ,X-Amz-Date,, '), ['content-type', 'x-amz-date']);
  t.same(requestedHeaders(undefined), []);
});
