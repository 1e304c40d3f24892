#!/usr/bin/env python3
"""boto3 DeleteObjects and CopyObject driver for test/e2e/copy-delete-cors.test.ts.

Creates --count keys under --prefix, deletes them with one delete_objects call (new botocore sends
x-amz-checksum-crc32 and no Content-MD5: the wire headers are recorded), lists what is left, then
sends a second batch in Quiet mode together with an over-long key (the whole request is refused with
KeyTooLongError and nothing is deleted), then deletes that batch in Quiet mode. Finally copy_object with ChecksumAlgorithm=SHA256 and a COPY of that copy. Prints one JSON
document; the TS side asserts on it. Credentials come from the environment.
"""
import argparse
import base64
import hashlib
import json
from concurrent.futures import ThreadPoolExecutor

import boto3
import botocore
from botocore.config import Config
from botocore.exceptions import ClientError


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--count", type=int, default=1000)
    args = parser.parse_args()

    s3 = boto3.client(
        "s3",
        endpoint_url=args.endpoint,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}, max_pool_connections=16),
    )
    wire = []

    def record(request, **_kwargs):
        headers = {k.lower(): (v.decode() if isinstance(v, bytes) else v) for k, v in request.headers.items()}
        wire.append({h: headers.get(h) for h in ("content-md5", "x-amz-checksum-crc32", "x-amz-sdk-checksum-algorithm", "x-amz-content-sha256")})

    s3.meta.events.register("before-send.s3.DeleteObjects", record)
    out = {"botocore": botocore.__version__}

    def create(keys):
        with ThreadPoolExecutor(max_workers=16) as pool:
            list(pool.map(lambda k: s3.put_object(Bucket=args.bucket, Key=k, Body=k.encode()), keys))

    def remaining(prefix):
        keys = []
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=args.bucket, Prefix=prefix):
            keys.extend(o["Key"] for o in page.get("Contents", []))
        return keys

    batch = [f"{args.prefix}loud/{i:04d} key+with space" for i in range(args.count)]
    create(batch)
    before = len(remaining(f"{args.prefix}loud/"))
    r = s3.delete_objects(Bucket=args.bucket, Delete={"Objects": [{"Key": k} for k in batch]})
    out["loud"] = {
        "before": before,
        "deleted": sorted(d["Key"] for d in r.get("Deleted", [])) == sorted(batch),
        "deletedCount": len(r.get("Deleted", [])),
        "errors": r.get("Errors", []),
        "left": len(remaining(f"{args.prefix}loud/")),
    }

    quiet_batch = [f"{args.prefix}quiet/{i:04d}" for i in range(args.count - 1)]
    create(quiet_batch)
    too_long = "x" * 1025
    try:
        s3.delete_objects(
            Bucket=args.bucket,
            Delete={"Quiet": True, "Objects": [{"Key": k} for k in quiet_batch] + [{"Key": too_long}]},
        )
        refused = None
    except ClientError as err:
        refused = err.response.get("Error", {}).get("Code")
    left_after_refusal = len(remaining(f"{args.prefix}quiet/"))
    r = s3.delete_objects(Bucket=args.bucket, Delete={"Quiet": True, "Objects": [{"Key": k} for k in quiet_batch]})
    out["quiet"] = {
        "refused": refused,
        "leftAfterRefusal": left_after_refusal,
        "deletedCount": len(r.get("Deleted", [])),
        "errors": r.get("Errors", []),
        "left": len(remaining(f"{args.prefix}quiet/")),
    }
    out["wire"] = wire

    body = b"copy me with sha256\n" * 1000
    src = f"{args.prefix}copy/src.bin"
    s3.put_object(Bucket=args.bucket, Key=src, Body=body, Metadata={"origin": "boto3"})
    c = s3.copy_object(Bucket=args.bucket, Key=f"{args.prefix}copy/dst.bin", CopySource={"Bucket": args.bucket, "Key": src}, ChecksumAlgorithm="SHA256")
    h = s3.head_object(Bucket=args.bucket, Key=f"{args.prefix}copy/dst.bin", ChecksumMode="ENABLED")
    c2 = s3.copy_object(Bucket=args.bucket, Key=f"{args.prefix}copy/dst2.bin", CopySource=f"{args.bucket}/{args.prefix}copy/dst.bin")
    got = s3.get_object(Bucket=args.bucket, Key=f"{args.prefix}copy/dst2.bin", ChecksumMode="ENABLED")
    data = got["Body"].read()
    out["copy"] = {
        "expectedSha256": base64.b64encode(hashlib.sha256(body).digest()).decode(),
        "resultSha256": c["CopyObjectResult"].get("ChecksumSHA256"),
        "resultETag": c["CopyObjectResult"].get("ETag"),
        "md5": '"' + hashlib.md5(body).hexdigest() + '"',
        "headSha256": h.get("ChecksumSHA256"),
        "headMetadata": h.get("Metadata"),
        "copyOfCopySha256": c2["CopyObjectResult"].get("ChecksumSHA256"),
        "getSha256": got.get("ChecksumSHA256"),
        "bytesEqual": data == body,
    }
    try:
        s3.copy_object(Bucket=args.bucket, Key=src, CopySource={"Bucket": args.bucket, "Key": src})
        out["selfCopy"] = "succeeded"
    except ClientError as e:
        out["selfCopy"] = e.response["Error"]["Code"]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
