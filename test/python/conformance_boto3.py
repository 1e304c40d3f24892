#!/usr/bin/env python3
"""boto3 driver for test/e2e/conformance-boto3.test.ts.

One phase per invocation (the first argument); each prints one JSON document on stdout and the
TypeScript side asserts on it. Nothing here judges the server beyond catching exceptions: every
expected value is computed on the TS side with the suite's own helpers.

  transfer        upload_file + download_file with TransferConfig(multipart_threshold=8 MiB) and the
                  default checksum (CRC32; a trailer over HTTPS), head_object with ChecksumMode
  presign         generate_presigned_url for put_object and get_object
  delete-objects  delete_objects of the given keys (new SDKs send CRC32 and no Content-MD5),
                  then list_objects_v2 of the prefix; then a Quiet delete
  cors-put        put_bucket_cors + get_bucket_cors
  cors-delete     delete_bucket_cors + get_bucket_cors (expects NoSuchCORSConfiguration)

Credentials come from the environment (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY).
"""
import argparse
import json
import sys
import traceback

import boto3
import botocore
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError

MiB = 1024 * 1024
WIRE_HEADERS = (
    "x-amz-content-sha256",
    "x-amz-trailer",
    "content-encoding",
    "content-md5",
    "x-amz-sdk-checksum-algorithm",
    "x-amz-checksum-algorithm",
    "x-amz-checksum-type",
    "x-amz-checksum-crc32",
    "x-amz-checksum-crc32c",
    "x-amz-checksum-sha256",
)


def make_client(endpoint, ca_bundle):
    config = Config(
        s3={"addressing_style": "path"},
        signature_version="s3v4",
        retries={"max_attempts": 1, "mode": "standard"},
        request_checksum_calculation="when_supported",
        response_checksum_validation="when_supported",
        connect_timeout=10,
        read_timeout=120,
        max_pool_connections=32,
    )
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        verify=ca_bundle if ca_bundle else True,
        config=config,
    )


def record_wire(client):
    """Headers botocore actually sent, per operation (a list per operation, in order)."""
    wire = {}

    def before_send(request, event_name="", **kwargs):
        op = event_name.rsplit(".", 1)[-1]
        headers = {k.lower(): (v.decode() if isinstance(v, bytes) else v) for k, v in request.headers.items()}
        wire.setdefault(op or "?", []).append({k: headers.get(k) for k in WIRE_HEADERS if k in headers})

    client.meta.events.register("before-send.s3.*", before_send)
    return wire


def error_of(exc):
    if isinstance(exc, ClientError):
        return {
            "code": exc.response.get("Error", {}).get("Code"),
            "status": exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode"),
            "message": str(exc),
        }
    return {"code": type(exc).__name__, "status": None, "message": "".join(traceback.format_exception(exc))[-3000:]}


def phase_transfer(args, client, wire):
    out = {"botocore": botocore.__version__}
    config = TransferConfig(multipart_threshold=8 * MiB, multipart_chunksize=8 * MiB, max_concurrency=4)
    try:
        client.upload_file(args.src, args.bucket, args.key, Config=config)
        out["upload"] = "ok"
    except Exception as exc:  # noqa: BLE001 - reported to the TS side
        out["upload"] = error_of(exc)
    try:
        head = client.head_object(Bucket=args.bucket, Key=args.key, ChecksumMode="ENABLED")
        out["head"] = {
            "etag": head.get("ETag"),
            "contentLength": head.get("ContentLength"),
            "checksumCRC32": head.get("ChecksumCRC32"),
            "checksumType": head.get("ChecksumType"),
        }
    except Exception as exc:  # noqa: BLE001
        out["head"] = error_of(exc)
    try:
        client.download_file(args.bucket, args.key, args.dst, Config=config)
        out["download"] = "ok"
    except Exception as exc:  # noqa: BLE001
        out["download"] = error_of(exc)
    out["wire"] = wire
    return out


def phase_presign(args, client, wire):
    params = {"Bucket": args.bucket, "Key": args.key}
    return {
        "put": client.generate_presigned_url("put_object", Params=params, ExpiresIn=600),
        "get": client.generate_presigned_url("get_object", Params=params, ExpiresIn=600),
    }


def phase_delete_objects(args, client, wire):
    with open(args.keys_file, encoding="utf-8") as f:
        keys = json.load(f)
    out = {}
    try:
        res = client.delete_objects(
            Bucket=args.bucket, Delete={"Objects": [{"Key": k} for k in keys], "Quiet": False}
        )
        out["deleted"] = [d.get("Key") for d in res.get("Deleted", [])]
        out["errors"] = res.get("Errors", [])
    except Exception as exc:  # noqa: BLE001
        out["deleteError"] = error_of(exc)
    try:
        listed = client.list_objects_v2(Bucket=args.bucket, Prefix=args.prefix)
        out["remainingKeyCount"] = listed.get("KeyCount")
        out["remaining"] = [c["Key"] for c in listed.get("Contents", [])]
    except Exception as exc:  # noqa: BLE001
        out["listError"] = error_of(exc)
    # Quiet mode: only errors come back; deleting a missing key is a success.
    try:
        res = client.delete_objects(
            Bucket=args.bucket,
            Delete={"Objects": [{"Key": keys[0]}, {"Key": args.prefix + "never-existed"}], "Quiet": True},
        )
        out["quiet"] = {"deleted": res.get("Deleted", []), "errors": res.get("Errors", [])}
    except Exception as exc:  # noqa: BLE001
        out["quiet"] = {"error": error_of(exc)}
    out["wire"] = wire
    return out


CORS_RULES = [
    {
        "AllowedOrigins": ["https://app.example"],
        "AllowedMethods": ["GET", "PUT", "HEAD"],
        "AllowedHeaders": ["*"],
        "ExposeHeaders": ["ETag", "x-amz-request-id"],
        "MaxAgeSeconds": 600,
    }
]


def phase_cors_put(args, client, wire):
    out = {}
    try:
        client.put_bucket_cors(Bucket=args.bucket, CORSConfiguration={"CORSRules": CORS_RULES})
        out["put"] = "ok"
    except Exception as exc:  # noqa: BLE001
        out["put"] = error_of(exc)
    try:
        rules = client.get_bucket_cors(Bucket=args.bucket).get("CORSRules", [])
        # botocore may add an ID; compare what was set.
        out["rules"] = [{k: r.get(k) for k in ("AllowedOrigins", "AllowedMethods", "AllowedHeaders", "ExposeHeaders", "MaxAgeSeconds")} for r in rules]
    except Exception as exc:  # noqa: BLE001
        out["rules"] = error_of(exc)
    out["expected"] = CORS_RULES
    return out


def phase_cors_delete(args, client, wire):
    out = {}
    try:
        client.delete_bucket_cors(Bucket=args.bucket)
        out["delete"] = "ok"
    except Exception as exc:  # noqa: BLE001
        out["delete"] = error_of(exc)
    try:
        client.get_bucket_cors(Bucket=args.bucket)
        out["getAfter"] = "ok"
    except Exception as exc:  # noqa: BLE001
        out["getAfter"] = error_of(exc)
    return out


PHASES = {
    "transfer": phase_transfer,
    "presign": phase_presign,
    "delete-objects": phase_delete_objects,
    "cors-put": phase_cors_put,
    "cors-delete": phase_cors_delete,
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("phase", choices=sorted(PHASES))
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--ca-bundle", default=None)
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--key", default="")
    parser.add_argument("--prefix", default="")
    parser.add_argument("--src", default=None)
    parser.add_argument("--dst", default=None)
    parser.add_argument("--keys-file", default=None)
    args = parser.parse_args()
    client = make_client(args.endpoint, args.ca_bundle)
    wire = record_wire(client)
    out = PHASES[args.phase](args, client, wire)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
