#!/usr/bin/env python3
"""boto3 driver for test/e2e/versioning.test.ts: bucket versioning as a backup tool uses it.

Runs one scenario on --bucket (a fresh, never-versioned bucket) and prints one JSON document of what
the server answered, step by step; the TypeScript side judges it. Credentials come from the
environment (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY).
"""
import argparse
import json
import traceback

import boto3
import requests
from botocore.config import Config
from botocore.exceptions import ClientError


def err(e):
    r = e.response
    return {
        "status": r["ResponseMetadata"]["HTTPStatusCode"],
        "code": r.get("Error", {}).get("Code"),
        "message": r.get("Error", {}).get("Message"),
        "deleteMarker": r["ResponseMetadata"]["HTTPHeaders"].get("x-amz-delete-marker"),
        "versionId": r["ResponseMetadata"]["HTTPHeaders"].get("x-amz-version-id"),
        "lastModified": r["ResponseMetadata"]["HTTPHeaders"].get("last-modified"),
    }


def attempt(fn):
    try:
        return {"ok": fn()}
    except ClientError as e:
        return {"error": err(e)}


def versions_of(s3, bucket, **kw):
    r = s3.list_object_versions(Bucket=bucket, **kw)
    entries = [("V", v["Key"], v["VersionId"], v["IsLatest"], v.get("Size"), v.get("ETag")) for v in r.get("Versions", [])]
    entries += [("D", d["Key"], d["VersionId"], d["IsLatest"], None, None) for d in r.get("DeleteMarkers", [])]
    return r, entries


def paginate_all(s3, bucket, max_keys, **kw):
    """Every entry through MaxKeys-sized pages (Version and DeleteMarker merged back in list order)."""
    pages = []
    out = []
    params = dict(kw)
    while True:
        r = s3.list_object_versions(Bucket=bucket, MaxKeys=max_keys, **params)
        page = [(v["Key"], v["VersionId"], "V", v["IsLatest"]) for v in r.get("Versions", [])]
        page += [(d["Key"], d["VersionId"], "D", d["IsLatest"]) for d in r.get("DeleteMarkers", [])]
        pages.append({"n": len(page), "prefixes": [p["Prefix"] for p in r.get("CommonPrefixes", [])], "truncated": r["IsTruncated"],
                      "nextKey": r.get("NextKeyMarker"), "nextVersion": r.get("NextVersionIdMarker")})
        out.extend(page)
        if not r["IsTruncated"]:
            break
        params["KeyMarker"] = r["NextKeyMarker"]
        if r.get("NextVersionIdMarker"):
            params["VersionIdMarker"] = r["NextVersionIdMarker"]
        else:
            params.pop("VersionIdMarker", None)
        if len(pages) > 50:
            break
    return pages, out


def tag_list(resp):
    return sorted([t["Key"], t["Value"]] for t in resp["TagSet"])


def seams(s3, w):
    """Tags, GetObjectAttributes, copies and POST uploads on versions (bucket `w`, created here)."""
    o = {}
    s3.create_bucket(Bucket=w)
    s3.put_object(Bucket=w, Key="k", Body=b"one", Tagging="a=1")  # the "null" version
    s3.put_bucket_versioning(Bucket=w, VersioningConfiguration={"Status": "Enabled"})
    v2 = s3.put_object(Bucket=w, Key="k", Body=b"two", Tagging="b=2")["VersionId"]
    v3 = s3.put_object(Bucket=w, Key="k", Body=b"three")["VersionId"]
    o["ids"] = [v2, v3]
    listing = lambda: [(v["VersionId"], v["IsLatest"], v["LastModified"].isoformat(), v["ETag"]) for v in s3.list_object_versions(Bucket=w, Prefix="k")["Versions"]]
    before = listing()

    def get_tags(**kw):
        r = s3.get_object_tagging(Bucket=w, Key="k", **kw)
        return {"tags": tag_list(r), "versionId": r.get("VersionId")}

    o["getNull"] = get_tags(VersionId="null")
    o["getV2"] = get_tags(VersionId=v2)
    o["getCurrent"] = get_tags()
    r = s3.put_object_tagging(Bucket=w, Key="k", VersionId=v2, Tagging={"TagSet": [{"Key": "c", "Value": "3"}]})
    o["putV2"] = r.get("VersionId")
    r = s3.delete_object_tagging(Bucket=w, Key="k", VersionId="null")
    o["deleteNull"] = {"status": r["ResponseMetadata"]["HTTPStatusCode"], "versionId": r.get("VersionId")}
    r = s3.put_object_tagging(Bucket=w, Key="k", Tagging={"TagSet": [{"Key": "cur", "Value": "x"}]})
    o["putCurrent"] = r.get("VersionId")
    o["after"] = {"null": get_tags(VersionId="null")["tags"], "v2": get_tags(VersionId=v2)["tags"], "v3": get_tags(VersionId=v3)["tags"]}
    o["listingUnchanged"] = listing() == before
    o["headV2TagCount"] = s3.head_object(Bucket=w, Key="k", VersionId=v2).get("TagCount")
    o["getNullTagCount"] = s3.get_object(Bucket=w, Key="k", VersionId="null").get("TagCount")
    o["tagMalformed"] = attempt(lambda: s3.get_object_tagging(Bucket=w, Key="k", VersionId="v1"))
    o["tagUnknown"] = attempt(lambda: s3.put_object_tagging(Bucket=w, Key="k", VersionId="U" * 32, Tagging={"TagSet": []}))

    # GetObjectAttributes of a version.
    def attrs(**kw):
        r = s3.get_object_attributes(Bucket=w, Key="k", ObjectAttributes=["ETag", "ObjectSize"], **kw)
        return {"versionId": r.get("VersionId"), "size": r.get("ObjectSize"), "etag": r.get("ETag"), "lastModified": r["LastModified"].isoformat()}

    o["attrsV2"] = attrs(VersionId=v2)
    o["attrsNull"] = attrs(VersionId="null")
    o["attrsCurrent"] = attrs()
    o["attrsUnknown"] = attempt(lambda: attrs(VersionId="U" * 32))
    o["attrsMalformed"] = attempt(lambda: attrs(VersionId="nope"))
    o["listingV2"] = [e for e in before if e[0] == v2][0]

    # CopyObject from a version: that version's tags (COPY directive).
    r = s3.copy_object(Bucket=w, Key="copy", CopySource={"Bucket": w, "Key": "k", "VersionId": v2})
    o["copy"] = {"sourceVersionId": r.get("CopySourceVersionId"), "tags": get_tags_of(s3, w, "copy")}

    # A multipart upload with tags completes into a version that keeps them, also once overwritten.
    up = s3.create_multipart_upload(Bucket=w, Key="mp", Tagging="m=1")["UploadId"]
    etag = s3.upload_part(Bucket=w, Key="mp", UploadId=up, PartNumber=1, Body=b"p" * 10)["ETag"]
    mv = s3.complete_multipart_upload(Bucket=w, Key="mp", UploadId=up, MultipartUpload={"Parts": [{"ETag": etag, "PartNumber": 1}]})["VersionId"]
    s3.put_object(Bucket=w, Key="mp", Body=b"new")
    o["multipart"] = {"old": tag_list(s3.get_object_tagging(Bucket=w, Key="mp", VersionId=mv)), "current": get_tags_of(s3, w, "mp")}

    # Delete markers: the current one is NoSuchKey, one named by id 405.
    marker = s3.delete_object(Bucket=w, Key="k")["VersionId"]
    o["marker"] = marker
    o["tagOverMarker"] = attempt(lambda: s3.get_object_tagging(Bucket=w, Key="k"))
    o["putTagOverMarker"] = attempt(lambda: s3.put_object_tagging(Bucket=w, Key="k", Tagging={"TagSet": []}))
    o["tagMarkerById"] = attempt(lambda: s3.get_object_tagging(Bucket=w, Key="k", VersionId=marker))
    o["putTagMarkerById"] = attempt(lambda: s3.put_object_tagging(Bucket=w, Key="k", VersionId=marker, Tagging={"TagSet": []}))
    o["deleteTagMarkerById"] = attempt(lambda: s3.delete_object_tagging(Bucket=w, Key="k", VersionId=marker))
    o["attrsOverMarker"] = attempt(lambda: attrs())
    o["attrsMarkerById"] = attempt(lambda: attrs(VersionId=marker))
    o["tagBehindMarker"] = get_tags(VersionId=v2)

    # A browser POST upload on a versioned bucket answers its version id.
    post = s3.generate_presigned_post(w, "posted.txt", ExpiresIn=600)
    r = requests.post(post["url"], data=post["fields"], files=[("file", ("f.txt", b"posted"))], allow_redirects=False)
    o["post"] = {"status": r.status_code, "versionId": r.headers.get("x-amz-version-id")}
    o["postHead"] = s3.head_object(Bucket=w, Key="posted.txt").get("VersionId")
    return o


def get_tags_of(s3, bucket, key):
    return tag_list(s3.get_object_tagging(Bucket=bucket, Key=key))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--bucket", required=True)
    args = parser.parse_args()
    b = args.bucket
    s3 = boto3.client("s3", endpoint_url=args.endpoint, region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    o = {}
    try:
        # Before versioning: no version ids, an object written now is the "null" version.
        o["initialStatus"] = s3.get_bucket_versioning(Bucket=b).get("Status")
        pre = s3.put_object(Bucket=b, Key="doc.txt", Body=b"v0")
        o["prePutVersionId"] = pre.get("VersionId")
        o["preListing"] = versions_of(s3, b)[1]

        s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
        o["enabledStatus"] = s3.get_bucket_versioning(Bucket=b).get("Status")
        ids = [s3.put_object(Bucket=b, Key="doc.txt", Body=f"v{i}".encode())["VersionId"] for i in (1, 2, 3)]
        o["putIds"] = ids
        head = s3.head_object(Bucket=b, Key="doc.txt")
        o["headLatest"] = {"versionId": head.get("VersionId"), "length": head["ContentLength"]}
        o["getById"] = [s3.get_object(Bucket=b, Key="doc.txt", VersionId=v)["Body"].read().decode() for v in ids]
        o["getNull"] = s3.get_object(Bucket=b, Key="doc.txt", VersionId="null")["Body"].read().decode()
        o["headNull"] = s3.head_object(Bucket=b, Key="doc.txt", VersionId="null").get("VersionId")
        o["listing"] = versions_of(s3, b)[1]
        o["plainList"] = [c["Key"] for c in s3.list_objects_v2(Bucket=b).get("Contents", [])]
        o["unknownVersion"] = attempt(lambda: s3.get_object(Bucket=b, Key="doc.txt", VersionId="A" * 32))
        o["invalidVersion"] = attempt(lambda: s3.get_object(Bucket=b, Key="doc.txt", VersionId="not-a-version"))

        # Delete markers.
        d = s3.delete_object(Bucket=b, Key="doc.txt")
        o["deleteMarker"] = {"marker": d.get("DeleteMarker"), "versionId": d.get("VersionId")}
        o["getAfterDelete"] = attempt(lambda: s3.get_object(Bucket=b, Key="doc.txt"))
        o["headAfterDelete"] = attempt(lambda: s3.head_object(Bucket=b, Key="doc.txt"))
        o["getMarkerById"] = attempt(lambda: s3.get_object(Bucket=b, Key="doc.txt", VersionId=d["VersionId"]))
        o["getOldAfterDelete"] = s3.get_object(Bucket=b, Key="doc.txt", VersionId=ids[1])["Body"].read().decode()
        o["plainListAfterDelete"] = [c["Key"] for c in s3.list_objects_v2(Bucket=b).get("Contents", [])]
        o["listingAfterDelete"] = versions_of(s3, b)[1]
        # Removing the marker by id brings the newest version back.
        rm = s3.delete_object(Bucket=b, Key="doc.txt", VersionId=d["VersionId"])
        o["removeMarker"] = {"marker": rm.get("DeleteMarker"), "versionId": rm.get("VersionId")}
        o["getAfterMarkerRemoved"] = s3.get_object(Bucket=b, Key="doc.txt")["Body"].read().decode()
        # Removing the current version by id: the previous one becomes current.
        rv = s3.delete_object(Bucket=b, Key="doc.txt", VersionId=ids[2])
        o["removeCurrent"] = {"marker": rv.get("DeleteMarker"), "versionId": rv.get("VersionId")}
        g = s3.get_object(Bucket=b, Key="doc.txt")
        o["getAfterCurrentRemoved"] = {"body": g["Body"].read().decode(), "versionId": g.get("VersionId")}
        o["removeMissing"] = attempt(lambda: s3.delete_object(Bucket=b, Key="doc.txt", VersionId="B" * 32)["ResponseMetadata"]["HTTPStatusCode"])

        # Copy from a version, conditional writes.
        c = s3.copy_object(Bucket=b, Key="copy.txt", CopySource={"Bucket": b, "Key": "doc.txt", "VersionId": ids[0]})
        o["copy"] = {"versionId": c.get("VersionId"), "sourceVersionId": c.get("CopySourceVersionId"),
                     "body": s3.get_object(Bucket=b, Key="copy.txt")["Body"].read().decode()}
        o["copyFromMarker"] = attempt(lambda: s3.copy_object(Bucket=b, Key="copy2.txt", CopySource={"Bucket": b, "Key": "copy.txt", "VersionId": s3.delete_object(Bucket=b, Key="copy.txt")["VersionId"]}))
        o["ifNoneMatchOverMarker"] = attempt(lambda: s3.put_object(Bucket=b, Key="copy.txt", Body=b"again", IfNoneMatch="*")["VersionId"])
        o["ifNoneMatchOverObject"] = attempt(lambda: s3.put_object(Bucket=b, Key="copy.txt", Body=b"again", IfNoneMatch="*")["VersionId"])

        # Multipart on a versioned bucket.
        mp = s3.create_multipart_upload(Bucket=b, Key="big.bin")
        part = s3.upload_part(Bucket=b, Key="big.bin", UploadId=mp["UploadId"], PartNumber=1, Body=b"x" * (5 * 1024 * 1024))
        done = s3.complete_multipart_upload(Bucket=b, Key="big.bin", UploadId=mp["UploadId"],
                                            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})
        o["multipart"] = {"versionId": done.get("VersionId"),
                          "headVersionId": s3.head_object(Bucket=b, Key="big.bin").get("VersionId")}
        s3.put_object(Bucket=b, Key="big.bin", Body=b"small now")
        o["multipartOld"] = s3.head_object(Bucket=b, Key="big.bin", VersionId=done["VersionId"])["ContentLength"]

        # Suspended: new writes are the "null" version, which replaces the previous "null" version.
        s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
        o["suspendedStatus"] = s3.get_bucket_versioning(Bucket=b).get("Status")
        sp = s3.put_object(Bucket=b, Key="doc.txt", Body=b"s1")
        o["suspendedPut"] = sp.get("VersionId")
        sp2 = s3.put_object(Bucket=b, Key="doc.txt", Body=b"s2")
        o["suspendedPut2"] = sp2.get("VersionId")
        o["suspendedListing"] = [e for e in versions_of(s3, b, Prefix="doc.txt")[1]]
        sd = s3.delete_object(Bucket=b, Key="doc.txt")
        o["suspendedDelete"] = {"marker": sd.get("DeleteMarker"), "versionId": sd.get("VersionId")}
        o["suspendedListingAfterDelete"] = [e for e in versions_of(s3, b, Prefix="doc.txt")[1]]

        # DeleteObjects with version ids.
        s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
        a1 = s3.put_object(Bucket=b, Key="multi/a", Body=b"a1")["VersionId"]
        s3.put_object(Bucket=b, Key="multi/a", Body=b"a2")
        s3.put_object(Bucket=b, Key="multi/b", Body=b"b1")
        r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "multi/a", "VersionId": a1}, {"Key": "multi/b"},
                                                            {"Key": "multi/c", "VersionId": "C" * 32}, {"Key": "multi/d", "VersionId": "bad"}]})
        o["deleteObjects"] = {
            "deleted": [{k: e.get(k) for k in ("Key", "VersionId", "DeleteMarker", "DeleteMarkerVersionId")} for e in r.get("Deleted", [])],
            "errors": [{k: e.get(k) for k in ("Key", "VersionId", "Code")} for e in r.get("Errors", [])],
        }
        o["multiListing"] = versions_of(s3, b, Prefix="multi/")[1]

        # Pagination with MaxKeys, and delimiter.
        for i in range(3):
            for j in range(3):
                s3.put_object(Bucket=b, Key=f"page/k{i}", Body=f"{i}.{j}".encode())
        s3.delete_object(Bucket=b, Key="page/k1")
        s3.put_object(Bucket=b, Key="page/sub/x", Body=b"x")
        o["pages2"] = paginate_all(s3, b, 2, Prefix="page/")
        o["pages1000"] = paginate_all(s3, b, 1000, Prefix="page/")
        o["pagesDelimiter"] = paginate_all(s3, b, 2, Prefix="page/", Delimiter="/")

        # The bucket cannot go while versions remain; once every version is gone it can.
        o["deleteBucketNotEmpty"] = attempt(lambda: s3.delete_bucket(Bucket=b))
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=b):
            objs = [{"Key": v["Key"], "VersionId": v["VersionId"]} for v in page.get("Versions", []) + page.get("DeleteMarkers", [])]
            if objs:
                s3.delete_objects(Bucket=b, Delete={"Objects": objs, "Quiet": True})
        o["leftAfterPurge"] = versions_of(s3, b)[1]
        o["deleteBucket"] = attempt(lambda: s3.delete_bucket(Bucket=b)["ResponseMetadata"]["HTTPStatusCode"])
        o["seams"] = seams(s3, b + "-wire")
    except Exception:  # noqa: BLE001 - reported to the TS side, which fails the test with it
        o["exception"] = traceback.format_exc()
    print(json.dumps(o))


if __name__ == "__main__":
    main()
