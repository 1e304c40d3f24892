#!/usr/bin/env python3
"""boto3 object tagging, GetObjectAttributes and per-part checksums, for test/e2e/tagging-attributes.test.ts.

Tags: put_object(Tagging=), put/get/delete_object_tagging (10 tags, the errors for 11, a long key, a
duplicate key), the ETag and LastModified across tag changes, x-amz-tagging-count on HEAD/GET,
copy_object with TaggingDirective COPY and REPLACE, create_multipart_upload(Tagging=).
Attributes: get_object_attributes of a COMPOSITE CRC32 multipart object paged with MaxParts and
PartNumberMarker, of a FULL_OBJECT one, of a plain object; its errors. Part reads: head/get_object with
PartNumber and ChecksumMode=ENABLED (botocore validates what it gets). Prints one JSON document; the TS
side asserts on it. Credentials come from the environment.
"""
import argparse
import json
import os

import boto3
import botocore
from botocore.config import Config
from botocore.exceptions import ClientError

MIB = 1024 * 1024


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--bucket", required=True)
    args = parser.parse_args()
    b = args.bucket
    s3 = boto3.client(
        "s3",
        endpoint_url=args.endpoint,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )
    out = {"botocore": botocore.__version__}

    def code(fn, **kw):
        try:
            fn(**kw)
            return "ok"
        except ClientError as e:
            return f"{e.response['Error']['Code']}: {e.response['Error'].get('Message', '')}"

    def tags(key):
        return [[t["Key"], t["Value"]] for t in s3.get_object_tagging(Bucket=b, Key=key)["TagSet"]]

    def count_header(resp):
        return resp["ResponseMetadata"]["HTTPHeaders"].get("x-amz-tagging-count")

    # --- PutObject with Tagging, then the tagging operations.
    s3.put_object(Bucket=b, Key="t/obj", Body=b"hello tags", Tagging="z=last&a=1&space=two+words&empty=")
    head = s3.head_object(Bucket=b, Key="t/obj")
    out["putTags"] = tags("t/obj")
    out["headCount"] = count_header(head)
    got = s3.get_object(Bucket=b, Key="t/obj")
    got["Body"].read()
    out["getTagCount"] = got.get("TagCount")

    ten = {"TagSet": [{"Key": f"k{i}".ljust(128, "k"), "Value": "v" * 256} for i in range(10)]}
    wire = []
    s3.meta.events.register(
        "before-send.s3.PutObjectTagging",
        lambda request, **_: wire.append(sorted(k.lower() for k in request.headers.keys() if k.lower().startswith(("content-md5", "x-amz-checksum")))),
    )
    s3.put_object_tagging(Bucket=b, Key="t/obj", Tagging=ten)
    after = s3.head_object(Bucket=b, Key="t/obj")
    out["tenTags"] = len(tags("t/obj"))
    out["unchanged"] = after["ETag"] == head["ETag"] and after["LastModified"] == head["LastModified"]
    out["wire"] = wire
    eleven = {"TagSet": [{"Key": f"k{i}", "Value": "v"} for i in range(11)]}
    out["eleven"] = code(s3.put_object_tagging, Bucket=b, Key="t/obj", Tagging=eleven)
    out["longKey"] = code(s3.put_object_tagging, Bucket=b, Key="t/obj", Tagging={"TagSet": [{"Key": "k" * 129, "Value": "v"}]})
    out["longValue"] = code(s3.put_object_tagging, Bucket=b, Key="t/obj", Tagging={"TagSet": [{"Key": "k", "Value": "v" * 257}]})
    out["duplicate"] = code(s3.put_object_tagging, Bucket=b, Key="t/obj", Tagging={"TagSet": [{"Key": "k", "Value": "1"}, {"Key": "k", "Value": "2"}]})
    out["awsPrefix"] = code(s3.put_object_tagging, Bucket=b, Key="t/obj", Tagging={"TagSet": [{"Key": "aws:k", "Value": "1"}]})
    out["badHeader"] = code(s3.put_object, Bucket=b, Key="t/bad", Body=b"x", Tagging="a=b=c")
    out["badHeaderStored"] = code(s3.head_object, Bucket=b, Key="t/bad")
    out["noSuchKey"] = code(s3.put_object_tagging, Bucket=b, Key="t/missing", Tagging={"TagSet": []})
    out["tagsAfterErrors"] = len(tags("t/obj"))
    out["versionNull"] = code(s3.get_object_tagging, Bucket=b, Key="t/obj", VersionId="null")
    out["versionOther"] = code(s3.get_object_tagging, Bucket=b, Key="t/obj", VersionId="V" * 32)
    out["versionMalformed"] = code(s3.get_object_tagging, Bucket=b, Key="t/obj", VersionId="v1")

    deleted = s3.delete_object_tagging(Bucket=b, Key="t/obj")
    out["deleteStatus"] = deleted["ResponseMetadata"]["HTTPStatusCode"]
    out["afterDelete"] = tags("t/obj")
    out["headCountAfterDelete"] = count_header(s3.head_object(Bucket=b, Key="t/obj"))

    # --- CopyObject and the tagging directive.
    s3.put_object_tagging(Bucket=b, Key="t/obj", Tagging={"TagSet": [{"Key": "src", "Value": "1"}]})
    s3.copy_object(Bucket=b, Key="t/copy", CopySource={"Bucket": b, "Key": "t/obj"}, Tagging="ignored=1")
    out["copyDefault"] = tags("t/copy")
    s3.copy_object(Bucket=b, Key="t/replace", CopySource={"Bucket": b, "Key": "t/obj"}, TaggingDirective="REPLACE", Tagging="dst=2")
    out["copyReplace"] = tags("t/replace")
    s3.copy_object(Bucket=b, Key="t/replace-none", CopySource={"Bucket": b, "Key": "t/obj"}, TaggingDirective="REPLACE")
    out["copyReplaceNone"] = tags("t/replace-none")
    out["copyBadDirective"] = code(s3.copy_object, Bucket=b, Key="t/x", CopySource={"Bucket": b, "Key": "t/obj"}, TaggingDirective="MERGE")

    # --- A COMPOSITE CRC32 multipart object with tags: attributes paged, part checksums.
    sizes = [5 * MIB, 5 * MIB, 1000]
    datas = [os.urandom(n) for n in sizes]
    up = s3.create_multipart_upload(Bucket=b, Key="t/mp", ChecksumAlgorithm="CRC32", Tagging="mp=yes")
    parts = []
    for i, data in enumerate(datas, 1):
        r = s3.upload_part(Bucket=b, Key="t/mp", UploadId=up["UploadId"], PartNumber=i, Body=data, ChecksumAlgorithm="CRC32")
        parts.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumCRC32": r["ChecksumCRC32"]})
    s3.complete_multipart_upload(Bucket=b, Key="t/mp", UploadId=up["UploadId"], MultipartUpload={"Parts": parts})
    out["mpTags"] = tags("t/mp")
    mp_head = s3.head_object(Bucket=b, Key="t/mp", ChecksumMode="ENABLED")
    every = ["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"]
    page1 = s3.get_object_attributes(Bucket=b, Key="t/mp", ObjectAttributes=every, MaxParts=2)
    page2 = s3.get_object_attributes(Bucket=b, Key="t/mp", ObjectAttributes=["ObjectParts"], MaxParts=2, PartNumberMarker=2)
    for p in (page1, page2):
        p.pop("ResponseMetadata")
        p["LastModified"] = p["LastModified"].isoformat()
    out["mp"] = {
        "headETag": mp_head["ETag"],
        "headChecksum": mp_head.get("ChecksumCRC32"),
        "headLastModified": mp_head["LastModified"].isoformat(),
        "partChecksums": [p["ChecksumCRC32"] for p in parts],
        "page1": page1,
        "page2": page2,
    }
    part2 = s3.head_object(Bucket=b, Key="t/mp", PartNumber=2, ChecksumMode="ENABLED")
    got2 = s3.get_object(Bucket=b, Key="t/mp", PartNumber=3, ChecksumMode="ENABLED")
    body3 = got2["Body"].read()
    out["mpPartReads"] = {
        "head2": part2.get("ChecksumCRC32"),
        "head2Type": part2.get("ChecksumType"),
        "get3": got2.get("ChecksumCRC32"),
        "get3BodyOk": body3 == datas[2],
        "headCount": count_header(part2),
    }

    # --- A FULL_OBJECT CRC32 multipart object: no part checksums, the part count alone.
    up = s3.create_multipart_upload(Bucket=b, Key="t/full", ChecksumAlgorithm="CRC32", ChecksumType="FULL_OBJECT")
    fparts = []
    for i, data in enumerate(datas[1:], 1):
        r = s3.upload_part(Bucket=b, Key="t/full", UploadId=up["UploadId"], PartNumber=i, Body=data, ChecksumAlgorithm="CRC32")
        fparts.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumCRC32": r["ChecksumCRC32"]})
    s3.complete_multipart_upload(Bucket=b, Key="t/full", UploadId=up["UploadId"], MultipartUpload={"Parts": fparts}, ChecksumType="FULL_OBJECT")
    full_attrs = s3.get_object_attributes(Bucket=b, Key="t/full", ObjectAttributes=["Checksum", "ObjectParts"])
    fpart = s3.get_object(Bucket=b, Key="t/full", PartNumber=1, ChecksumMode="ENABLED")
    fbody = fpart["Body"].read()
    out["full"] = {
        "checksum": full_attrs.get("Checksum"),
        "objectParts": full_attrs.get("ObjectParts"),
        "headChecksum": s3.head_object(Bucket=b, Key="t/full", ChecksumMode="ENABLED").get("ChecksumCRC32"),
        "part1Checksum": fpart.get("ChecksumCRC32"),
        "part1BodyOk": fbody == datas[1],
    }

    # --- A plain object: no ObjectParts; errors.
    s3.put_object(Bucket=b, Key="t/plain", Body=b"plain", ChecksumAlgorithm="SHA256")
    plain = s3.get_object_attributes(Bucket=b, Key="t/plain", ObjectAttributes=["ETag", "ObjectParts", "ObjectSize", "Checksum"])
    plain.pop("ResponseMetadata")
    plain["LastModified"] = plain["LastModified"].isoformat()
    out["plain"] = plain
    out["plainPart1"] = s3.head_object(Bucket=b, Key="t/plain", PartNumber=1, ChecksumMode="ENABLED").get("ChecksumSHA256")
    out["attrErrors"] = {
        "bogus": code(s3.get_object_attributes, Bucket=b, Key="t/plain", ObjectAttributes=["Bogus"]),
        "missing": code(s3.get_object_attributes, Bucket=b, Key="t/nothing", ObjectAttributes=["ETag"]),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
