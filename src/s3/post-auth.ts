// Who signed a POST Object form: the SigV4 fields (x-amz-algorithm, -credential, -date, -signature: an
// HMAC-SHA256 of the base64 policy under the credential's signing key), or the SigV2 ones
// (AWSAccessKeyId, signature: a base64 HMAC-SHA1 of the policy). A form with neither is anonymous.
// The signature covers the policy text exactly as sent, checked before the policy is decoded.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { S3Error } from '../errors/s3-errors.js';
import { ALGORITHM, deriveSigningKey, signatureMatches, signWithKey } from '../auth/sigv4/index.js';
import { parseAmzDate, parseCredential } from '../auth/sigv4/parse.js';
import type { FormFields } from './post-policy.js';

export interface PostAuthOptions {
  region: string;
  getSecret(accessKeyId: string): string | undefined;
}

/** The key that signed the form, and the policy it signed; undefined for an anonymous form. */
export interface PostSigner {
  accessKeyId: string;
  policy: string;
}

/** S3's answer for a field the form lacks (or sent after the file): the field named as AWS spells it. */
export function missingField(name: string): S3Error {
  return new S3Error('InvalidArgument', `Bucket POST must contain a field named '${name}'.  If it is specified, please check the order of the fields.`, {
    ArgumentName: name,
    ArgumentValue: '',
  });
}

function argument(name: string, value: string, message: string, extra: Record<string, string> = {}): S3Error {
  return new S3Error('InvalidArgument', message, { ArgumentName: name, ArgumentValue: value.slice(0, 256), ...extra });
}

function required(fields: FormFields, lower: string, spelled: string): string {
  const v = fields.get(lower)?.value;
  if (v === undefined) throw missingField(spelled);
  return v;
}

function signatureMismatch(accessKeyId: string, policy: string, provided: string): S3Error {
  return new S3Error('SignatureDoesNotMatch', undefined, {
    AWSAccessKeyId: accessKeyId.slice(0, 128),
    StringToSign: policy.slice(0, 16384),
    SignatureProvided: provided.slice(0, 256),
  });
}

function lookupSecret(opts: PostAuthOptions, accessKeyId: string): string {
  const secret = opts.getSecret(accessKeyId);
  if (secret === undefined) throw new S3Error('InvalidAccessKeyId', undefined, { AWSAccessKeyId: accessKeyId.slice(0, 128) });
  return secret;
}

function verifyV4(fields: FormFields, opts: PostAuthOptions): PostSigner {
  const algorithm = required(fields, 'x-amz-algorithm', 'X-Amz-Algorithm');
  const credentialText = required(fields, 'x-amz-credential', 'X-Amz-Credential');
  const amzDate = required(fields, 'x-amz-date', 'X-Amz-Date');
  const signature = required(fields, 'x-amz-signature', 'X-Amz-Signature');
  const policy = required(fields, 'policy', 'Policy');
  if (algorithm !== ALGORITHM) {
    throw argument('X-Amz-Algorithm', algorithm, `X-Amz-Algorithm only supports "${ALGORITHM}"`);
  }
  const credential = parseCredential(credentialText);
  if (!credential) {
    throw argument('X-Amz-Credential', credentialText, 'Error parsing the X-Amz-Credential parameter; the Credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".');
  }
  if (credential.region !== opts.region) {
    throw argument('X-Amz-Credential', credentialText, `the region '${credential.region.slice(0, 64)}' is wrong; expecting '${opts.region}'`, { Region: opts.region });
  }
  if (credential.service !== 's3') {
    throw argument('X-Amz-Credential', credentialText, `incorrect service '${credential.service.slice(0, 64)}'. This endpoint belongs to 's3'.`);
  }
  if (credential.terminator !== 'aws4_request') {
    throw argument('X-Amz-Credential', credentialText, `incorrect terminal '${credential.terminator.slice(0, 64)}'. This endpoint uses 'aws4_request'.`);
  }
  if (!/^\d{8}$/.test(credential.date) || parseAmzDate(`${credential.date}T000000Z`) === undefined) {
    throw argument('X-Amz-Credential', credentialText, `incorrect date format '${credential.date.slice(0, 64)}'. This date in the credential must be in the format 'yyyyMMdd'.`);
  }
  if (parseAmzDate(amzDate) === undefined) throw argument('X-Amz-Date', amzDate, 'X-Amz-Date must be formated via ISO8601 Long format');
  const secret = lookupSecret(opts, credential.accessKeyId);
  const key = deriveSigningKey(secret, credential.date, credential.region, credential.service);
  if (!signatureMatches(signature, signWithKey(key, policy))) {
    throw signatureMismatch(credential.accessKeyId, policy, signature);
  }
  return { accessKeyId: credential.accessKeyId, policy };
}

function verifyV2(fields: FormFields, opts: PostAuthOptions): PostSigner {
  const accessKeyId = required(fields, 'awsaccesskeyid', 'AWSAccessKeyId');
  const signature = required(fields, 'signature', 'Signature');
  const policy = required(fields, 'policy', 'Policy');
  const secret = lookupSecret(opts, accessKeyId);
  const expected = createHmac('sha1', secret).update(policy, 'utf8').digest();
  const given = Buffer.from(signature, 'base64');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw signatureMismatch(accessKeyId, policy, signature);
  return { accessKeyId, policy };
}

const V4_FIELDS = ['x-amz-algorithm', 'x-amz-credential', 'x-amz-date', 'x-amz-signature'];
const V2_FIELDS = ['awsaccesskeyid', 'signature'];

/**
 * Verifies the form's signature. Any SigV4 field makes the form a SigV4 one (the others must be there),
 * likewise for SigV2; a form with neither (even with a policy) is anonymous: undefined.
 */
export function verifyPostSignature(fields: FormFields, opts: PostAuthOptions): PostSigner | undefined {
  if (V4_FIELDS.some((f) => fields.has(f))) return verifyV4(fields, opts);
  if (V2_FIELDS.some((f) => fields.has(f))) return verifyV2(fields, opts);
  return undefined;
}
