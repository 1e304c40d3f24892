#!/usr/bin/env python3
"""Browser-style POST Object uploads for test/e2e/post-object.test.ts.

boto3's generate_presigned_post signs the policies (with Conditions and Fields); `requests` posts the
multipart forms, as a browser would. Every case records what came back (status, error code and
message, headers) and whether the key exists afterwards, and the stored objects are read back with
boto3. Forms boto3 cannot produce (a broken policy, SigV2, a non-multipart body) are built here.
Prints one JSON document; the TS side asserts on it. Root credentials come from the environment;
bucket keys from the arguments.
"""
import argparse
import base64
import datetime
import hashlib
import hmac
import json
import os
import re

import boto3
import requests
from botocore.config import Config
from botocore.exceptions import ClientError


def error_of(r):
    code = re.search(r"<Code>([^<]*)</Code>", r.text)
    message = re.search(r"<Message>([^<]*)</Message>", r.text)
    return {
        "status": r.status_code,
        "code": code.group(1) if code else None,
        "message": message.group(1).replace("&quot;", '"').replace("&apos;", "'") if message else None,
        "body": r.text[:2000],
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--other-bucket", required=True)
    parser.add_argument("--vhost-domain", required=True)
    parser.add_argument("--read-key", required=True, help="id:secret of a read-only key of --bucket")
    parser.add_argument("--other-key", required=True, help="id:secret of a read_write key of --other-bucket")
    parser.add_argument("--origin", required=True, help="an Origin the bucket's CORS rules allow")
    parser.add_argument("--browser-redirect", required=True, help="success_action_redirect of the browser form")
    args = parser.parse_args()

    def client(key_id=None, secret=None):
        kw = {}
        if key_id:
            kw = {"aws_access_key_id": key_id, "aws_secret_access_key": secret}
        return boto3.client(
            "s3", endpoint_url=args.endpoint, region_name="us-east-1",
            config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1}), **kw,
        )

    s3 = client()
    b = args.bucket
    out = {"cases": {}, "objects": {}}

    def exists(key):
        try:
            s3.head_object(Bucket=b, Key=key)
            return True
        except ClientError:
            return False

    def post(name, presigned, file=("f.txt", b"data"), extra=None, drop=(), after=None, expect_key=None, **kw):
        fields = {k: v for k, v in presigned["fields"].items() if k not in drop}
        fields.update(extra or {})
        files = [("file", file)] + (after or [])
        r = requests.post(presigned["url"], data=fields, files=files, allow_redirects=False, **kw)
        res = error_of(r)
        res["headers"] = {k.lower(): v for k, v in r.headers.items()}
        if expect_key is not None:
            res["stored"] = exists(expect_key)
        out["cases"][name] = res
        return r

    meta_fields = {
        "Content-Type": "text/plain; charset=utf-8",
        "Cache-Control": "max-age=60",
        "Content-Disposition": 'attachment; filename="report.txt"',
        "x-amz-meta-color": "blue",
        "acl": "private",
    }
    meta_conditions = [
        {"Content-Type": "text/plain; charset=utf-8"},
        ["starts-with", "$Cache-Control", "max-age="],
        ["starts-with", "$Content-Disposition", ""],
        ["starts-with", "$x-amz-meta-color", ""],
        {"acl": "private"},
        ["content-length-range", 1, 4 * 1024 * 1024],
    ]

    # 1. The default answer: 204, the key from ${filename}, metadata on the object; a field after the file is ignored.
    p = s3.generate_presigned_post(b, "uploads/${filename}", Fields=meta_fields, Conditions=meta_conditions, ExpiresIn=600)
    out["url"] = p["url"]
    out["policyFields"] = sorted(p["fields"].keys())
    post("ok204", p, file=("C:\\Users\\me\\hello world.txt", b"hello from a form"), after=[("submit", (None, "Upload"))],
         expect_key="uploads/hello world.txt")
    o = s3.get_object(Bucket=b, Key="uploads/hello world.txt")
    out["objects"]["ok204"] = {
        "body": o["Body"].read().decode(), "contentType": o["ContentType"], "metadata": o["Metadata"],
        "cacheControl": o.get("CacheControl"), "contentDisposition": o.get("ContentDisposition"), "etag": o["ETag"],
    }

    # Tags from the `tagging` field (a <Tagging> document, ceph s3-tests' tags_authenticated_request).
    tags_xml = "<Tagging><TagSet><Tag><Key>0</Key><Value>zero</Value></Tag><Tag><Key>team</Key><Value>web ui</Value></Tag></TagSet></Tagging>"
    p = s3.generate_presigned_post(b, "tagged.txt", Fields={"tagging": tags_xml}, Conditions=[["starts-with", "$tagging", ""]], ExpiresIn=600)
    post("tagged", p, expect_key="tagged.txt")
    out["objects"]["tagged"] = s3.get_object_tagging(Bucket=b, Key="tagged.txt")["TagSet"]
    post("badTagging", p | {"fields": {**p["fields"], "tagging": "not-xml"}}, expect_key="bad-tagging-never")

    # 2. A larger file (3 MiB: staged in the backend, not inline), with Content-MD5 checked as on PUT.
    big = bytes(range(256)) * (3 * 4096)
    p = s3.generate_presigned_post(b, "big.bin", Fields={"Content-MD5": base64.b64encode(hashlib.md5(big).digest()).decode()},
                                   Conditions=[["starts-with", "$Content-MD5", ""]], ExpiresIn=600)
    post("big", p, file=("big.bin", big, "application/octet-stream"), expect_key="big.bin")
    o = s3.get_object(Bucket=b, Key="big.bin")
    data = o["Body"].read()
    out["objects"]["big"] = {"size": len(data), "md5": hashlib.md5(data).hexdigest(), "expectedMd5": hashlib.md5(big).hexdigest(), "contentType": o["ContentType"]}
    post("badMd5", p | {"fields": {**p["fields"], "Content-MD5": base64.b64encode(hashlib.md5(b"x").digest()).decode()}},
         file=("big.bin", b"not what the digest says"), expect_key="bad-md5-never")

    # 3. success_action_status 201 (PostResponse XML), 200 (empty), anything else 204.
    for status in ("201", "200", "404"):
        p = s3.generate_presigned_post(b, f"status-{status}.txt", Fields={"success_action_status": status},
                                       Conditions=[{"success_action_status": status}], ExpiresIn=600)
        post(f"status{status}", p, expect_key=f"status-{status}.txt")

    # 4. success_action_redirect: 303 to the URL, its query kept, bucket/key/etag appended.
    redirect = "https://app.example.com/done?from=form"
    p = s3.generate_presigned_post(b, "redirect/a b.txt", Fields={"success_action_redirect": redirect},
                                   Conditions=[["starts-with", "$success_action_redirect", "https://app.example.com/"]], ExpiresIn=600)
    post("redirect", p, expect_key="redirect/a b.txt")
    out["objects"]["redirect"] = {"etag": s3.head_object(Bucket=b, Key="redirect/a b.txt")["ETag"]}
    p = s3.generate_presigned_post(b, "redirect-relative.txt", Fields={"success_action_redirect": "/relative"},
                                   Conditions=[["starts-with", "$success_action_redirect", ""]], ExpiresIn=600)
    post("redirectRelative", p, expect_key="redirect-relative.txt")

    # 5. Refusals, each leaving nothing behind.
    p = s3.generate_presigned_post(b, "denied.txt", Fields={"Content-Type": "text/plain"},
                                   Conditions=[{"Content-Type": "text/plain"}, ["content-length-range", 2, 10]], ExpiresIn=600)
    post("badSignature", p, extra={"x-amz-signature": "0" * 64}, expect_key="denied.txt")
    post("conditionFailed", p, extra={"Content-Type": "text/html"}, expect_key="denied.txt")
    post("extraField", p, extra={"x-amz-meta-sneaky": "1"}, expect_key="denied.txt")
    post("tooLarge", p, file=("f.txt", b"x" * 11), expect_key="denied.txt")
    post("tooSmall", p, file=("f.txt", b"x"), expect_key="denied.txt")
    post("missingSignature", p, drop=("x-amz-signature",), expect_key="denied.txt")
    post("missingKey", p, drop=("key",), expect_key="denied.txt")
    post("anonymous", {"url": p["url"], "fields": {"key": "denied.txt", "Content-Type": "text/plain"}}, expect_key="denied.txt")
    r = requests.post(p["url"], data=p["fields"], allow_redirects=False)  # urlencoded, no file at all
    out["cases"]["notMultipart"] = error_of(r)
    r = requests.post(p["url"], data=p["fields"], files=[("notthefile", ("f.txt", b"data"))], allow_redirects=False)
    out["cases"]["missingFile"] = error_of(r)
    out["cases"]["missingFile"]["stored"] = exists("denied.txt")
    expired = s3.generate_presigned_post(b, "denied.txt", ExpiresIn=-60)
    post("expired", expired, expect_key="denied.txt")
    # A file sent before the key: fields after the file are ignored, so the key is missing.
    r = requests.post(p["url"], data={k: v for k, v in p["fields"].items() if k != "key"},
                      files=[("file", ("f.txt", b"data")), ("key", (None, "denied.txt"))], allow_redirects=False)
    out["cases"]["keyAfterFile"] = error_of(r)

    # A body cut short inside the file part (no closing delimiter): not well-formed, nothing stored.
    boundary = "cutshort"
    body = b"".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode() for k, v in p["fields"].items()
    ) + f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="f.txt"\r\n\r\n'.encode() + b"abcde"
    r = requests.post(p["url"], data=body, headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    out["cases"]["truncated"] = error_of(r)
    out["cases"]["truncated"]["stored"] = exists("denied.txt")

    # A policy that is not JSON, signed correctly (boto3 cannot make one): 400 InvalidPolicyDocument.
    creds = s3._request_signer._credentials
    now = datetime.datetime.now(datetime.timezone.utc)
    date, amz_date = now.strftime("%Y%m%d"), now.strftime("%Y%m%dT%H%M%SZ")

    def v4_form(policy_b64, key_id=creds.access_key, secret=creds.secret_key):
        k = ("AWS4" + secret).encode()
        for part in (date, "us-east-1", "s3", "aws4_request"):
            k = hmac.new(k, part.encode(), hashlib.sha256).digest()
        return {
            "key": "denied.txt", "x-amz-algorithm": "AWS4-HMAC-SHA256",
            "x-amz-credential": f"{key_id}/{date}/us-east-1/s3/aws4_request", "x-amz-date": amz_date,
            "policy": policy_b64, "x-amz-signature": hmac.new(k, policy_b64.encode(), hashlib.sha256).hexdigest(),
        }

    broken = base64.b64encode(b'{"expiration": "2030-01-01T00:00:00Z", "conditions": [').decode()
    r = requests.post(p["url"], data=v4_form(broken), files={"file": ("f.txt", b"data")})
    out["cases"]["malformedPolicy"] = error_of(r)

    # SigV2 forms (what ceph s3-tests sends): AWSAccessKeyId + base64 HMAC-SHA1 signature.
    policy_doc = {"expiration": (now + datetime.timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                  "conditions": [{"bucket": b}, ["starts-with", "$key", "v2/"], {"acl": "private"}, ["content-length-range", 0, 1024]]}
    policy_b64 = base64.b64encode(json.dumps(policy_doc).encode()).decode()
    v2_sig = base64.b64encode(hmac.new(creds.secret_key.encode(), policy_b64.encode(), hashlib.sha1).digest()).decode()
    r = requests.post(p["url"], files=[("key", (None, "v2/${filename}")), ("AWSAccessKeyId", (None, creds.access_key)), ("acl", (None, "private")),
                                       ("signature", (None, v2_sig)), ("policy", (None, policy_b64)), ("file", ("v2.txt", b"bar"))])
    out["cases"]["sigv2"] = error_of(r)
    out["cases"]["sigv2"]["stored"] = exists("v2/v2.txt")

    # 6. Keys: a read-only bucket key and another bucket's read_write key cannot upload here; a policy
    # for this bucket posted to another bucket's URL fails its bucket condition.
    rid, rsecret = args.read_key.split(":", 1)
    post("readOnlyKey", client(rid, rsecret).generate_presigned_post(b, "denied.txt", ExpiresIn=600), expect_key="denied.txt")
    oid, osecret = args.other_key.split(":", 1)
    post("otherBucketKey", client(oid, osecret).generate_presigned_post(b, "denied.txt", ExpiresIn=600), expect_key="denied.txt")
    p = s3.generate_presigned_post(b, "wrong-bucket.txt", ExpiresIn=600)
    post("wrongBucket", {"url": p["url"].replace(f"/{b}", f"/{args.other_bucket}"), "fields": p["fields"]})
    out["cases"]["wrongBucket"]["storedInOther"] = len(s3.list_objects_v2(Bucket=args.other_bucket).get("Contents", [])) > 0

    # 7. Virtual-hosted style: POST / with Host: <bucket>.<domain>; CORS headers for a browser Origin.
    s3.put_bucket_cors(Bucket=b, CORSConfiguration={"CORSRules": [
        {"AllowedOrigins": [args.origin], "AllowedMethods": ["POST"], "ExposeHeaders": ["ETag", "Location"]},
    ]})
    p = s3.generate_presigned_post(b, "vhost.txt", ExpiresIn=600)
    host = f"{b}.{args.vhost_domain}"
    post("vhost", {"url": args.endpoint + "/", "fields": p["fields"]}, headers={"Host": host, "Origin": args.origin}, expect_key="vhost.txt")

    # 8. The forms chromium submits (test/e2e/post-object.test.ts).
    redirect_to = args.browser_redirect
    out["browser"] = {
        "redirect": s3.generate_presigned_post(
            b, "browser/${filename}",
            Fields={"success_action_redirect": redirect_to, "Content-Type": "image/png", "x-amz-meta-from": "chromium"},
            Conditions=[["starts-with", "$success_action_redirect", redirect_to], ["starts-with", "$Content-Type", "image/"],
                        {"x-amz-meta-from": "chromium"}, ["content-length-range", 1, 1024 * 1024]],
            ExpiresIn=600),
        "created": s3.generate_presigned_post(b, "browser-201/${filename}", Fields={"success_action_status": "201"},
                                              Conditions=[{"success_action_status": "201"}], ExpiresIn=600),
        "fetch": s3.generate_presigned_post(b, "browser-fetch.bin", ExpiresIn=600),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
