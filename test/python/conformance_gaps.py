#!/usr/bin/env python3
"""boto3 driver for test/e2e/conformance-gaps.test.ts: the answers real clients met (issue 20).

One run, one JSON document on stdout; the TypeScript side asserts on it. Nothing here judges the
server: exceptions are caught and reported as {status, code, message, error}.

  presign     generate_presigned_url(get_object) with ExpiresIn 0, -7, 604800 and 604801, fetched
  parts       get_object/head_object with PartNumber on a single-part object and a two-part one
  listing     list_objects_v2 with an empty ContinuationToken; Prefix and Delimiter '\\n' (s3-tests
              test_bucket_listv2_prefix_unreadable / test_bucket_list_delimiter_unreadable)
  create      create_bucket of a bucket one owns
  racing      conditional writes under concurrency: 8 put_object(IfNoneMatch='*') of one new key,
              8 put_object(IfMatch=<its ETag>), 4 complete_multipart_upload(IfNoneMatch='*'), each
              set started together from threads (one attempt each: a retry would hide the answer)

Credentials come from the environment (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY).
"""
import argparse
import hashlib
import json
import threading
import urllib.error
import urllib.request

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

MiB = 1024 * 1024


def error_of(e):
    r = e.response
    return {
        "status": r["ResponseMetadata"]["HTTPStatusCode"],
        "code": r["Error"].get("Code"),
        "message": r["Error"].get("Message"),
        "error": dict(r["Error"]),
        "retries": r["ResponseMetadata"].get("RetryAttempts"),
    }


def attempt(fn):
    try:
        return {"ok": fn()}
    except ClientError as e:
        return error_of(e)


def fetch(url):
    try:
        with urllib.request.urlopen(url) as res:
            return {"status": res.status, "body": res.read().decode("utf-8", "replace")}
    except urllib.error.HTTPError as e:
        return {"status": e.code, "body": e.read().decode("utf-8", "replace")}


def presign(s3, bucket):
    s3.put_object(Bucket=bucket, Key="presigned.txt", Body=b"presigned")
    out = {}
    for expires in (0, -7, 604800, 604801):
        url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "presigned.txt"}, ExpiresIn=expires)
        out[str(expires)] = fetch(url)
    return out


def read_part(s3, head, **kw):
    def go():
        r = (s3.head_object if head else s3.get_object)(**kw)
        body = None if head else r["Body"].read()
        return {
            "status": r["ResponseMetadata"]["HTTPStatusCode"],
            "length": r.get("ContentLength"),
            "range": r.get("ContentRange"),
            "parts": r.get("PartsCount"),
            "etag": r.get("ETag"),
            "body": None if body is None else (body.decode() if len(body) < 100 else len(body)),
        }

    return attempt(go)


def parts(s3, bucket):
    out = {}
    single = s3.put_object(Bucket=bucket, Key="single", Body=b"body")
    out["single_etag"] = single["ETag"]
    for head in (False, True):
        verb = "head" if head else "get"
        for n in (1, 2):
            out[f"single_{verb}_{n}"] = read_part(s3, head, Bucket=bucket, Key="single", PartNumber=n)
    up = s3.create_multipart_upload(Bucket=bucket, Key="multi")["UploadId"]
    done = []
    for n, body in ((1, b"a" * (5 * MiB)), (2, b"tail-bytes")):
        etag = s3.upload_part(Bucket=bucket, Key="multi", UploadId=up, PartNumber=n, Body=body)["ETag"]
        done.append({"PartNumber": n, "ETag": etag})
    out["multi_etag"] = s3.complete_multipart_upload(Bucket=bucket, Key="multi", UploadId=up, MultipartUpload={"Parts": done})["ETag"]
    for head in (False, True):
        verb = "head" if head else "get"
        for n in (2, 3):
            out[f"multi_{verb}_{n}"] = read_part(s3, head, Bucket=bucket, Key="multi", PartNumber=n)
    return out


def listing(s3, bucket):
    for key in ("foo/bar", "foo/baz", "quux"):
        s3.put_object(Bucket=bucket, Key=key, Body=key.encode())
    out = {}
    out["empty_token"] = attempt(lambda: s3.list_objects_v2(Bucket=bucket, ContinuationToken="")["KeyCount"])

    def summary(r):
        return {
            "prefix": r.get("Prefix"),
            "delimiter": r.get("Delimiter"),
            "keys": [o["Key"] for o in r.get("Contents", [])],
            "prefixes": [p["Prefix"] for p in r.get("CommonPrefixes", [])],
        }

    # botocore asks for encoding-type=url itself on these and decodes the answer.
    out["v2_prefix_lf"] = attempt(lambda: summary(s3.list_objects_v2(Bucket=bucket, Prefix="\x0a")))
    out["v2_delimiter_lf"] = attempt(lambda: summary(s3.list_objects_v2(Bucket=bucket, Delimiter="\x0a")))
    out["v1_delimiter_lf"] = attempt(lambda: summary(s3.list_objects(Bucket=bucket, Delimiter="\x0a")))
    out["v1_prefix_lf"] = attempt(lambda: summary(s3.list_objects(Bucket=bucket, Prefix="\x0a")))
    return out


def race(calls):
    """Runs the calls at once (released together by a barrier); their results in call order."""
    barrier = threading.Barrier(len(calls))
    results = [None] * len(calls)

    def go(i, fn):
        barrier.wait()
        results[i] = attempt(fn)

    threads = [threading.Thread(target=go, args=(i, fn)) for i, fn in enumerate(calls)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return results


def racing(s3, bucket):
    out = {}
    bodies = [bytes([65 + i]) * (1 * MiB + i) for i in range(8)]
    out["body_etags"] = ['"%s"' % hashlib.md5(b).hexdigest() for b in bodies]
    out["create"] = race([lambda b=b: s3.put_object(Bucket=bucket, Key="race/new", Body=b, IfNoneMatch="*")["ETag"] for b in bodies])
    out["create_stored"] = s3.head_object(Bucket=bucket, Key="race/new")["ETag"]
    base = s3.put_object(Bucket=bucket, Key="race/match", Body=b"base")["ETag"]
    out["match"] = race([lambda b=b: s3.put_object(Bucket=bucket, Key="race/match", Body=b, IfMatch=base)["ETag"] for b in bodies])
    out["match_stored"] = s3.head_object(Bucket=bucket, Key="race/match")["ETag"]
    uploads = []
    for i in range(4):
        up = s3.create_multipart_upload(Bucket=bucket, Key="race/mpu")["UploadId"]
        etag = s3.upload_part(Bucket=bucket, Key="race/mpu", UploadId=up, PartNumber=1, Body=bodies[i])["ETag"]
        uploads.append((up, etag))
    out["complete"] = race([
        lambda up=up, etag=etag: s3.complete_multipart_upload(
            Bucket=bucket, Key="race/mpu", UploadId=up, IfNoneMatch="*",
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})["ETag"]
        for up, etag in uploads
    ])
    out["complete_stored"] = s3.head_object(Bucket=bucket, Key="race/mpu")["ETag"]
    return out


def create(s3, bucket):
    return attempt(lambda: s3.create_bucket(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--endpoint", required=True)
    p.add_argument("--bucket", required=True)
    p.add_argument("--list-bucket", required=True)
    a = p.parse_args()
    cfg = Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"mode": "standard", "max_attempts": 3})
    s3 = boto3.client("s3", endpoint_url=a.endpoint, region_name="us-east-1", config=cfg)
    once = Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"mode": "standard", "max_attempts": 1},
                  max_pool_connections=16)
    s3_once = boto3.client("s3", endpoint_url=a.endpoint, region_name="us-east-1", config=once)
    print(json.dumps({
        "presign": presign(s3, a.bucket),
        "parts": parts(s3, a.bucket),
        "listing": listing(s3, a.list_bucket),
        "create": create(s3, a.bucket),
        "racing": racing(s3_once, a.bucket),
    }))


if __name__ == "__main__":
    main()
