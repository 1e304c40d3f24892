#!/usr/bin/env python3
"""boto3 with its default configuration (only endpoint_url) and a bucket-scoped key, for
test/e2e/client-matrix.test.ts. Credentials come from the environment.

--mode read_write: put_object, upload_file (the managed transfer), list, get (bytes hashed), delete.
--mode read: list and get the object the read_write run left, then try put_object and delete_object.
Prints one JSON document; every AWS error is reported as its code, never raised.
"""
import argparse
import hashlib
import json

import boto3
from botocore.exceptions import ClientError


def attempt(fn):
    try:
        return {"ok": True, "value": fn()}
    except ClientError as err:
        return {"ok": False, "code": err.response.get("Error", {}).get("Code"),
                "status": err.response.get("ResponseMetadata", {}).get("HTTPStatusCode")}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--mode", choices=["read_write", "read"], required=True)
    parser.add_argument("--file", required=True)
    args = parser.parse_args()

    s3 = boto3.client("s3", endpoint_url=args.endpoint)
    b, p = args.bucket, args.prefix
    out = {}

    def listing():
        res = s3.list_objects_v2(Bucket=b, Prefix=p)
        return sorted(o["Key"] for o in res.get("Contents", []))

    def get_sha256(key):
        return hashlib.sha256(s3.get_object(Bucket=b, Key=key)["Body"].read()).hexdigest()

    if args.mode == "read_write":
        out["put"] = attempt(lambda: s3.put_object(Bucket=b, Key=p + "kept.bin", Body=b"kept by boto3\n")["ETag"])
        out["uploadFile"] = attempt(lambda: s3.upload_file(args.file, b, p + "file.bin"))
        out["listAfterPut"] = attempt(listing)
        out["getFile"] = attempt(lambda: get_sha256(p + "file.bin"))
        out["delete"] = attempt(lambda: s3.delete_object(Bucket=b, Key=p + "file.bin")["ResponseMetadata"]["HTTPStatusCode"])
        out["listAfterDelete"] = attempt(listing)
    else:
        out["list"] = attempt(listing)
        out["get"] = attempt(lambda: get_sha256(p + "kept.bin"))
        out["put"] = attempt(lambda: s3.put_object(Bucket=b, Key=p + "denied.bin", Body=b"no")["ETag"])
        out["delete"] = attempt(lambda: s3.delete_object(Bucket=b, Key=p + "kept.bin")["ResponseMetadata"]["HTTPStatusCode"])
        out["listAfter"] = attempt(listing)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
