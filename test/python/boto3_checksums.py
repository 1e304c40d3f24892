#!/usr/bin/env python3
"""boto3 flexible-checksum driver for test/e2e/boto3.test.ts.

Uploads one file with put_object once per checksum algorithm (ChecksumAlgorithm=...), reads each
object back with get_object(ChecksumMode='ENABLED') and head_object(ChecksumMode='ENABLED'),
records what botocore put on the wire (x-amz-content-sha256, trailer, checksum header), tries a
deliberately wrong ChecksumCRC32 (expects BadDigest and no object), and reads back objects that
the TypeScript side uploaded itself (--get-keys). Prints one JSON document on stdout; the TS test
asserts on it. Exits non-zero when something it can judge on its own is wrong (an unexpected
exception, bytes or checksums that differ between upload and download).

Credentials come from the environment (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY), everything
else from argv. botocore computes CRC32C and CRC64NVME only with awscrt installed; without it
those algorithms are reported as "needs-awscrt" and the TS side covers them with raw requests.
"""
import argparse
import base64
import hashlib
import json
import sys
import traceback
import zlib

import boto3
import botocore
from botocore.config import Config
from botocore.exceptions import ClientError

try:
    import awscrt.checksums

    HAS_CRT = True
    # Debian's awscrt (0.16) has crc32c but predates crc64nvme.
    CRT_ALGORITHMS = [a for a in ("CRC32C", "CRC64NVME") if hasattr(awscrt.checksums, a.lower())]
except ImportError:
    HAS_CRT = False
    CRT_ALGORITHMS = []

ALGORITHMS = ["CRC32", "CRC32C", "SHA1", "SHA256", "CRC64NVME"]
NEEDS_CRT = {"CRC32C", "CRC64NVME"}


def missing_dependency(exc):
    # Without awscrt: MissingDependencyException; with an awscrt too old for the algorithm:
    # FlexibleChecksumError "Unsupported checksum algorithm".
    name = type(exc).__name__
    return name == "MissingDependencyException" or (
        name == "FlexibleChecksumError" and "Unsupported checksum algorithm" in str(exc)
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--data-file", required=True)
    parser.add_argument("--key-prefix", default="")
    parser.add_argument("--ca-bundle", default=None)
    parser.add_argument("--get-keys", default="[]", help='JSON list of {"key","algorithm"}')
    args = parser.parse_args()

    with open(args.data_file, "rb") as f:
        data = f.read()
    data_sha256 = hashlib.sha256(data).hexdigest()

    config = Config(
        s3={"addressing_style": "path"},
        signature_version="s3v4",
        retries={"max_attempts": 1, "mode": "standard"},
        request_checksum_calculation="when_supported",
        response_checksum_validation="when_supported",
        connect_timeout=10,
        read_timeout=120,
    )
    client = boto3.client(
        "s3",
        endpoint_url=args.endpoint,
        region_name="us-east-1",
        verify=args.ca_bundle if args.ca_bundle else True,
        config=config,
    )

    wire = []

    def capture(request, **kwargs):
        headers = {k.lower(): (v.decode() if isinstance(v, bytes) else str(v)) for k, v in request.headers.items()}
        wire.append(
            {
                "contentSha256": headers.get("x-amz-content-sha256"),
                "contentEncoding": headers.get("content-encoding"),
                "trailer": headers.get("x-amz-trailer"),
                "sdkChecksumAlgorithm": headers.get("x-amz-sdk-checksum-algorithm"),
                "checksumHeaders": sorted(k for k in headers if k.startswith("x-amz-checksum-")),
                "transferEncoding": headers.get("transfer-encoding"),
            }
        )

    client.meta.events.register("before-send.s3.PutObject", capture)

    failures = []
    out = {
        "boto3": boto3.__version__,
        "botocore": botocore.__version__,
        "hasCrt": HAS_CRT,
        "crtAlgorithms": CRT_ALGORITHMS,
        "dataSha256": data_sha256,
        "puts": [],
        "gets": [],
        "wrongChecksum": None,
    }

    for algo in ALGORITHMS:
        key = f"{args.key_prefix}boto3-{algo.lower()}"
        entry = {"algorithm": algo, "key": key, "status": "ok"}
        out["puts"].append(entry)
        field = "Checksum" + algo
        wire.clear()
        try:
            put = client.put_object(Bucket=args.bucket, Key=key, Body=data, ChecksumAlgorithm=algo)
        except Exception as exc:  # noqa: BLE001
            if missing_dependency(exc) and algo in NEEDS_CRT and algo not in CRT_ALGORITHMS:
                entry["status"] = "needs-awscrt"
                entry["error"] = str(exc)
                continue
            entry["status"] = "error"
            entry["error"] = f"put_object: {type(exc).__name__}: {exc}"
            failures.append(entry["error"])
            continue
        entry["wire"] = wire[-1] if wire else None
        entry["putChecksum"] = put.get(field)
        entry["putETag"] = put.get("ETag")
        try:
            got = client.get_object(Bucket=args.bucket, Key=key, ChecksumMode="ENABLED")
            body = got["Body"].read()
            headers = got["ResponseMetadata"]["HTTPHeaders"]
            entry["get"] = {
                "sha256": hashlib.sha256(body).hexdigest(),
                "length": len(body),
                "contentLength": got.get("ContentLength"),
                "checksum": got.get(field),
                "checksumHeader": headers.get("x-amz-checksum-" + algo.lower()),
                "contentEncoding": got.get("ContentEncoding"),
                "etag": got.get("ETag"),
            }
            head = client.head_object(Bucket=args.bucket, Key=key, ChecksumMode="ENABLED")
            entry["head"] = {"checksum": head.get(field), "contentLength": head.get("ContentLength")}
        except Exception as exc:  # noqa: BLE001
            entry["status"] = "error"
            entry["error"] = f"get/head: {type(exc).__name__}: {exc}"
            failures.append(entry["error"])
            continue
        if entry["get"]["sha256"] != data_sha256:
            failures.append(f"{algo}: downloaded bytes differ")
        if entry["putChecksum"] is None or entry["get"]["checksum"] != entry["putChecksum"]:
            failures.append(f"{algo}: checksum on put {entry['putChecksum']!r} vs get {entry['get']['checksum']!r}")

    for item in json.loads(args.get_keys):
        key, algo = item["key"], item["algorithm"]
        entry = {"key": key, "algorithm": algo}
        out["gets"].append(entry)
        try:
            got = client.get_object(Bucket=args.bucket, Key=key, ChecksumMode="ENABLED")
            body = got["Body"].read()
            entry["sha256"] = hashlib.sha256(body).hexdigest()
            entry["checksum"] = got.get("Checksum" + algo)
            entry["contentEncoding"] = got.get("ContentEncoding")
        except Exception as exc:  # noqa: BLE001
            entry["error"] = f"{type(exc).__name__}: {exc}"
            failures.append(f"get {key}: {entry['error']}")

    # A wrong, well-formed CRC32 supplied by the caller goes out as an x-amz-checksum-crc32 header.
    wrong = ((zlib.crc32(data) ^ 0x5A5A5A5A) & 0xFFFFFFFF).to_bytes(4, "big")
    wrong_key = f"{args.key_prefix}boto3-wrong-crc32"
    result = {"key": wrong_key, "value": base64.b64encode(wrong).decode()}
    out["wrongChecksum"] = result
    try:
        client.put_object(Bucket=args.bucket, Key=wrong_key, Body=data, ChecksumCRC32=result["value"])
        result["status"] = 200
        result["code"] = None
    except ClientError as exc:
        result["status"] = exc.response["ResponseMetadata"]["HTTPStatusCode"]
        result["code"] = exc.response["Error"].get("Code")
    except Exception as exc:  # noqa: BLE001
        result["status"] = None
        result["code"] = f"{type(exc).__name__}: {exc}"
        failures.append(f"wrong checksum put: {result['code']}")
    try:
        client.head_object(Bucket=args.bucket, Key=wrong_key)
        result["headAfter"] = 200
    except ClientError as exc:
        result["headAfter"] = exc.response["ResponseMetadata"]["HTTPStatusCode"]

    out["failures"] = failures
    print(json.dumps(out))
    return 1 if failures else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        sys.exit(2)
