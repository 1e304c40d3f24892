#!/usr/bin/env python3
"""Many concurrent multipart uploads with boto3, for test/e2e/upload-buffer-cap.test.ts.

--uploads uploads run at once, one thread and one connection each: create_multipart_upload, then
one upload_part per --part-sizes entry (random bytes), then complete_multipart_upload. botocore
retries a 503 SlowDown by itself (standard mode, --max-attempts), so each upload either completes or
reports its error. Then every object is read back (16 at a time) and its SHA-256 compared with what
was sent. Prints one JSON document; the TS side asserts on it. Credentials come from the environment.
"""
import argparse
import hashlib
import json
import os
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

import boto3
from botocore.config import Config


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--uploads", type=int, required=True)
    parser.add_argument("--part-sizes", required=True, help="comma-separated byte counts, one per part")
    parser.add_argument("--max-attempts", type=int, default=10)
    args = parser.parse_args()
    part_sizes = [int(x) for x in args.part_sizes.split(",")]

    config = Config(
        s3={"addressing_style": "path"},
        signature_version="s3v4",
        retries={"mode": "standard", "max_attempts": args.max_attempts},
        max_pool_connections=args.uploads + 4,
        read_timeout=300,
        connect_timeout=30,
    )
    s3 = boto3.client("s3", endpoint_url=args.endpoint, config=config)

    retries = {"n": 0}
    lock = threading.Lock()

    def on_retry(attempts=None, response=None, **_):
        # Called before each attempt after the first: count the ones a SlowDown caused.
        if response is not None and response[1].get("Error", {}).get("Code") == "SlowDown":
            with lock:
                retries["n"] += 1

    s3.meta.events.register("needs-retry.s3", on_retry)

    barrier = threading.Barrier(args.uploads)

    def upload(i):
        key = "cap/%03d.bin" % i
        h = hashlib.sha256()
        try:
            barrier.wait(timeout=120)
            created = s3.create_multipart_upload(Bucket=args.bucket, Key=key)
            parts = []
            for n, size in enumerate(part_sizes, start=1):
                body = os.urandom(size)
                h.update(body)
                r = s3.upload_part(Bucket=args.bucket, Key=key, UploadId=created["UploadId"], PartNumber=n, Body=body)
                parts.append({"PartNumber": n, "ETag": r["ETag"]})
                del body
            s3.complete_multipart_upload(Bucket=args.bucket, Key=key, UploadId=created["UploadId"], MultipartUpload={"Parts": parts})
            return {"key": key, "sha256": h.hexdigest(), "ok": True}
        except Exception as e:  # reported, not raised: the TS side counts them
            return {"key": key, "ok": False, "error": "%s: %s" % (type(e).__name__, e)}

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=args.uploads) as pool:
        results = list(pool.map(upload, range(args.uploads)))
    upload_seconds = time.monotonic() - started

    def verify(r):
        if not r["ok"]:
            return r
        body = s3.get_object(Bucket=args.bucket, Key=r["key"])["Body"].read()
        r["readSha256"] = hashlib.sha256(body).hexdigest()
        r["size"] = len(body)
        return r

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(verify, results))
    verify_seconds = time.monotonic() - started

    json.dump(
        {
            "results": results,
            "slowDownRetries": retries["n"],
            "uploadSeconds": round(upload_seconds, 1),
            "verifySeconds": round(verify_seconds, 1),
        },
        sys.stdout,
    )


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        sys.exit(1)
