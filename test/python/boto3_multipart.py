#!/usr/bin/env python3
"""boto3 multipart driver for test/e2e/multipart.test.ts.

1. upload_file / download_file with TransferConfig(multipart_threshold=5 MiB, chunksize=5 MiB) and
   the default checksum settings (botocore >= 1.36: CRC32 named at CreateMultipartUpload, a CRC32 on
   every part, COMPOSITE); bytes compared; get_object(ChecksumMode=ENABLED) of the whole object so
   botocore sees the composite "-N" checksum (it skips validating those).
2. A FULL_OBJECT CRC32 upload by hand: create_multipart_upload(ChecksumAlgorithm='CRC32',
   ChecksumType='FULL_OBJECT'), upload_part x2, complete with the whole-object CRC32 (which the
   server combines from the part CRCs and checks), then get_object(ChecksumMode=ENABLED): botocore
   validates that CRC32 against the bytes it reads.
3. The same with a wrong whole-object CRC32: BadDigest.

Prints one JSON document; the TS side asserts on it. Exits non-zero on an unexpected exception.
Credentials come from the environment, everything else from argv.
"""
import argparse
import base64
import hashlib
import json
import os
import sys
import traceback
import zlib

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError

MIB = 1024 * 1024


def crc32_b64(data):
    return base64.b64encode((zlib.crc32(data) & 0xFFFFFFFF).to_bytes(4, "big")).decode()


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(MIB), b""):
            h.update(chunk)
    return h.hexdigest()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--prefix", default="")
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--ca-bundle", default=None)
    args = parser.parse_args()

    s3 = boto3.client(
        "s3",
        endpoint_url=args.endpoint,
        verify=args.ca_bundle if args.ca_bundle else True,
        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4", retries={"max_attempts": 1}),
    )
    out = {"failures": []}

    # 1. upload_file / download_file, multipart, default checksums.
    src = os.path.join(args.work_dir, "boto3-src.bin")
    data = os.urandom(13 * MIB + 12345)
    with open(src, "wb") as f:
        f.write(data)
    key = args.prefix + "transfer.bin"
    config = TransferConfig(multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB)
    s3.upload_file(src, args.bucket, key, Config=config)
    dst = os.path.join(args.work_dir, "boto3-dst.bin")
    s3.download_file(args.bucket, key, dst, Config=config)
    head = s3.head_object(Bucket=args.bucket, Key=key, ChecksumMode="ENABLED")
    whole = s3.get_object(Bucket=args.bucket, Key=key, ChecksumMode="ENABLED")
    whole_body = whole["Body"].read()
    out["transfer"] = {
        "srcSha256": hashlib.sha256(data).hexdigest(),
        "dstSha256": sha256_file(dst),
        "etag": head["ETag"],
        "contentLength": head["ContentLength"],
        "checksumCRC32": head.get("ChecksumCRC32"),
        "checksumType": head.get("ChecksumType"),
        "getSha256": hashlib.sha256(whole_body).hexdigest(),
        "partCrcs": [crc32_b64(data[i:i + 5 * MIB]) for i in range(0, len(data), 5 * MIB)],
    }

    # 2. FULL_OBJECT CRC32 by hand.
    fkey = args.prefix + "full-object.bin"
    parts_data = [os.urandom(5 * MIB), os.urandom(3 * MIB + 7)]
    full = b"".join(parts_data)
    created = s3.create_multipart_upload(Bucket=args.bucket, Key=fkey, ChecksumAlgorithm="CRC32", ChecksumType="FULL_OBJECT")
    parts = []
    for i, body in enumerate(parts_data, start=1):
        r = s3.upload_part(Bucket=args.bucket, Key=fkey, UploadId=created["UploadId"], PartNumber=i, Body=body, ChecksumAlgorithm="CRC32")
        parts.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumCRC32": r.get("ChecksumCRC32")})
    done = s3.complete_multipart_upload(
        Bucket=args.bucket,
        Key=fkey,
        UploadId=created["UploadId"],
        MultipartUpload={"Parts": parts},
        ChecksumCRC32=crc32_b64(full),
        ChecksumType="FULL_OBJECT",
    )
    got = s3.get_object(Bucket=args.bucket, Key=fkey, ChecksumMode="ENABLED")
    got_body = got["Body"].read()  # botocore validates the CRC32 while reading
    out["fullObject"] = {
        "createChecksumAlgorithm": created.get("ChecksumAlgorithm"),
        "createChecksumType": created.get("ChecksumType"),
        "partCrcs": [p["ChecksumCRC32"] for p in parts],
        "expectedPartCrcs": [crc32_b64(p) for p in parts_data],
        "completeChecksumCRC32": done.get("ChecksumCRC32"),
        "completeChecksumType": done.get("ChecksumType"),
        "expectedCRC32": crc32_b64(full),
        "getChecksumCRC32": got.get("ChecksumCRC32"),
        "getChecksumType": got.get("ChecksumType"),
        "getOk": got_body == full,
    }

    # 3. A wrong whole-object CRC32 on Complete.
    bkey = args.prefix + "bad-digest.bin"
    created = s3.create_multipart_upload(Bucket=args.bucket, Key=bkey, ChecksumAlgorithm="CRC32", ChecksumType="FULL_OBJECT")
    r = s3.upload_part(Bucket=args.bucket, Key=bkey, UploadId=created["UploadId"], PartNumber=1, Body=b"abc", ChecksumAlgorithm="CRC32")
    try:
        s3.complete_multipart_upload(
            Bucket=args.bucket,
            Key=bkey,
            UploadId=created["UploadId"],
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": r["ETag"], "ChecksumCRC32": r["ChecksumCRC32"]}]},
            ChecksumCRC32=crc32_b64(b"abd"),
            ChecksumType="FULL_OBJECT",
        )
        out["badDigest"] = {"code": None}
    except ClientError as e:
        out["badDigest"] = {"code": e.response["Error"]["Code"], "status": e.response["ResponseMetadata"]["HTTPStatusCode"]}
    s3.abort_multipart_upload(Bucket=args.bucket, Key=bkey, UploadId=created["UploadId"])

    print(json.dumps(out))


if __name__ == "__main__":
    try:
        main()
    except Exception:  # noqa: BLE001 - the TS side shows the traceback
        traceback.print_exc()
        sys.exit(1)
