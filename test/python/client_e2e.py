"""The Python client (clients/python, package s3edge_client) against the real server, driven by
test/e2e/python-client.test.ts, which starts the server, makes the user and its API key (in
S3EDGE_TOKEN), and asserts on the JSON this prints: what each call returned or raised, observed here,
judged there.

Three parts:
  package  the package itself: py.typed, pyproject.toml (no dependencies, py.typed shipped, valid for
           setuptools), every module compiles, every public method is annotated;
  server   every client call against the gateway at --base-url (domains answered by the RDAP fixture
           the TS test runs, hostname verification by its DNS fixture), errors included;
  stub     the retry policy, timeouts, refused connections, cut downloads and non-JSON answers against
           a tiny http.server on 127.0.0.1 in this process, whose answers a real gateway gives only
           under load (503) or never (a cut body).
Each step records its observations or the exception it did not expect, so one failure does not hide
the others. No bytecode is written (the TS test runs this with PYTHONDONTWRITEBYTECODE).
"""

from __future__ import annotations

import argparse
import hashlib
import http.server
import inspect
import io
import json
import os
import socket
import sys
import tempfile
import threading
import time
import traceback
from email.utils import formatdate
from typing import Any, Callable, Dict, List, Optional, Tuple

import s3edge_client
from s3edge_client import (
    AuthError,
    BadRequestError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    RateLimitedError,
    RetryPolicy,
    S3EdgeClient,
    S3EdgeError,
    ServerError,
    ServiceUnavailableError,
    TransportError,
)

PACKAGE_DIR = os.path.dirname(os.path.abspath(s3edge_client.__file__))
results: Dict[str, Dict[str, Any]] = {}
errors_seen: List[S3EdgeError] = []


def step(section: str, name: str, fn: Callable[[], Any]) -> None:
    try:
        value = fn()
    except Exception as err:  # an unexpected failure is an observation too
        value = {"unexpected": f"{type(err).__name__}: {err}", "trace": traceback.format_exc()[-2000:]}
    results.setdefault(section, {})[name] = value


def raised(fn: Callable[[], Any]) -> Dict[str, Any]:
    """What fn raised (it must raise an S3EdgeError): its class, its ancestry and its fields."""
    try:
        value = fn()
    except S3EdgeError as err:
        errors_seen.append(err)
        return {
            "type": type(err).__name__,
            "isAuthError": isinstance(err, AuthError),
            "isForbidden": isinstance(err, ForbiddenError),
            "isNotFound": isinstance(err, NotFoundError),
            "isServerError": isinstance(err, ServerError),
            "isRateLimited": isinstance(err, RateLimitedError),
            "status": err.status,
            "code": err.code,
            "message": err.message,
            "retryAfter": err.retry_after,
            "str": str(err),
        }
    return {"type": None, "returned": repr(value)[:200]}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------------------------- package


def package_checks() -> None:
    step("package", "pyTyped", lambda: os.path.isfile(os.path.join(PACKAGE_DIR, "py.typed")))

    def pyproject() -> Dict[str, Any]:
        import tomllib

        path = os.path.join(os.path.dirname(PACKAGE_DIR), "pyproject.toml")
        with open(path, "rb") as f:
            data = tomllib.load(f)
        project = data["project"]
        out: Dict[str, Any] = {
            "name": project["name"],
            "version": project["version"],
            "dependencies": project.get("dependencies"),
            "requiresPython": project.get("requires-python"),
            "packageData": data["tool"]["setuptools"]["package-data"],
            "versionMatches": project["version"] == s3edge_client.__version__,
        }
        try:
            from setuptools.config.pyprojecttoml import read_configuration
        except ImportError:
            out["setuptools"] = "absent"
        else:
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                read_configuration(path)  # validates [project] and [tool.setuptools]; raises when invalid
            out["setuptools"] = "valid"
        return out

    step("package", "pyproject", pyproject)

    def compiled() -> List[str]:
        names = sorted(f for f in os.listdir(PACKAGE_DIR) if f.endswith(".py"))
        for name in names:
            with open(os.path.join(PACKAGE_DIR, name), "rb") as f:
                compile(f.read(), name, "exec", dont_inherit=True)
        return names

    step("package", "compiled", compiled)

    def unannotated() -> Dict[str, Any]:
        missing: List[str] = []
        methods = [m for m in dir(S3EdgeClient) if not m.startswith("_") and callable(getattr(S3EdgeClient, m))]
        for name in methods + ["__init__"]:
            sig = inspect.signature(getattr(S3EdgeClient, name))
            for p in list(sig.parameters.values())[1:]:
                if p.annotation is inspect.Parameter.empty:
                    missing.append(f"{name}({p.name})")
            if sig.return_annotation is inspect.Signature.empty:
                missing.append(f"{name} -> ?")
        return {"methods": sorted(methods), "missing": missing}

    step("package", "annotations", unannotated)
    step("package", "exports", lambda: sorted(n for n in s3edge_client.__all__ if not hasattr(s3edge_client, n)))


# ----------------------------------------------------------------------------------------------- server


def server_checks(base_url: str, token: str, work: str) -> None:
    client = S3EdgeClient(base_url, token, timeout=10)
    ids: Dict[str, str] = {}
    payload = os.urandom(300 * 1024 + 7)
    on_disk = os.path.join(work, "report-python.bin")
    with open(on_disk, "wb") as f:
        f.write(payload)

    def upload_bytes() -> Dict[str, Any]:
        asset = client.upload_asset(b"hello from python\n", file_name="hello-python.txt", visibility="private", kind="file")
        ids["bytes"] = asset["id"]
        return dict(asset)

    def upload_path() -> Dict[str, Any]:
        asset = client.upload_asset(on_disk, visibility="public", kind="artifact")
        ids["path"] = asset["id"]
        return {**asset, "expectedSha256": sha256(payload), "expectedSize": len(payload)}

    def upload_file_objects() -> Dict[str, Any]:
        seekable = io.BytesIO(b"skip-me:" + b"from a file object")
        seekable.seek(len(b"skip-me:"))
        a = client.upload_asset(seekable, file_name="object.txt")
        r, w = os.pipe()
        os.write(w, b"from a pipe, sent chunked")
        os.close(w)
        with os.fdopen(r, "rb") as pipe:
            b = client.upload_asset(pipe, file_name="pipe.bin", content_type="application/x-custom")
        c = client.upload_asset(b"caf\xc3\xa9", file_name="r\u00e9sum\u00e9 \U0001f4c4.txt")
        ids.update(seekable=a["id"], pipe=b["id"], unicode=c["id"])
        return {
            "seekable": {"size": a["size"], "data": client.download_asset(a["id"]).decode()},
            "pipe": {"size": b["size"], "contentType": b["contentType"], "data": client.download_asset(b["id"]).decode()},
            "unicode": {"fileName": c["fileName"], "size": c["size"]},
        }

    step("server", "uploadBytes", upload_bytes)
    step("server", "uploadPath", upload_path)
    step("server", "uploadFileObjects", upload_file_objects)

    def listing() -> Dict[str, Any]:
        first = client.list_assets(page=1, limit=2)
        second = client.list_assets(page=2, limit=2)
        by_name = client.list_assets(search="report-python")
        artifacts = client.list_assets(kind="artifact")
        every = list(client.iter_assets(page_size=2))
        return {
            "first": {"pagination": first["pagination"], "count": len(first["assets"])},
            "second": {"pagination": second["pagination"], "count": len(second["assets"])},
            "pagesDisjoint": not ({a["id"] for a in first["assets"]} & {a["id"] for a in second["assets"]}),
            "search": [a["fileName"] for a in by_name["assets"]],
            "artifacts": [a["kind"] for a in artifacts["assets"]],
            "artifactIds": [a["id"] for a in artifacts["assets"]],
            "iterated": len(every),
            "iteratedDistinct": len({a["id"] for a in every}),
            "listItemKeys": sorted(first["assets"][0].keys()),
        }

    step("server", "list", listing)

    def downloads() -> Dict[str, Any]:
        as_bytes = client.download_asset(ids["path"])
        to_path = os.path.join(work, "downloaded.bin")
        written = client.download_asset_to(ids["path"], to_path, chunk_size=8192)
        with open(to_path, "rb") as f:
            from_file = f.read()
        buffer = io.BytesIO()
        written_obj = client.download_asset_to(ids["bytes"], buffer)
        return {
            "bytesEqual": as_bytes == payload,
            "pathWritten": written,
            "pathEqual": from_file == payload,
            "leftovers": sorted(f for f in os.listdir(work) if f.endswith(".part")),
            "fileObjectWritten": written_obj,
            "fileObject": buffer.getvalue().decode(),
            "range": client.download_asset(ids["path"], byte_range="bytes=0-9") == payload[:10],
            "iterChunks": sum(1 for _ in client.iter_download(ids["path"], chunk_size=65536)),
        }

    step("server", "download", downloads)
    step("server", "signedUrl", lambda: dict(client.signed_url(ids["bytes"], expires_in=120), assetId=ids["bytes"]))

    def delete() -> Dict[str, Any]:
        message = client.delete_asset(ids["bytes"])
        gone = client.list_assets(search="hello-python")["pagination"]["total"]
        return {
            "message": message,
            "listedAfter": gone,
            "downloadAfter": raised(lambda: client.download_asset(ids["bytes"])),
            "deleteAgain": raised(lambda: client.delete_asset(ids["bytes"])),
            "toPathAfter": raised(lambda: client.download_asset_to(ids["bytes"], os.path.join(work, "never.bin"))),
            "noFileLeft": not os.path.exists(os.path.join(work, "never.bin")),
        }

    step("server", "delete", delete)

    def summary_usage() -> Dict[str, Any]:
        s = client.summary()
        u = client.usage(limit=3)
        full = client.usage(limit=500)
        return {
            "totalFiles": s["totalFiles"],
            "storageBytes": s["storageBytes"],
            "recentAssets": len(s["recentAssets"]),
            "creditsEnabled": s["credits"]["enabled"],
            "spaceStatus": s["space"]["status"],
            "usageEvents": len(u["events"]),
            "usageKeys": sorted(u.keys()),
            "eventTypes": sorted({e["eventType"] for e in full["events"]}),
            "rawDaily": [sorted(d.keys()) for d in client.request("GET", "/api/v3/cdn/usage/daily", query={"days": 3})["data"]["days"]],
            "quota": client.storage_quota(),
        }

    step("server", "summaryUsage", summary_usage)

    def storage_keys() -> Dict[str, Any]:
        bucket = client.create_bucket("py-client-bucket")
        created = client.create_access_key("py-client-bucket", "python ci", "read_write")
        listed = client.list_access_keys("py-client-bucket")
        message = client.delete_access_key("py-client-bucket", created["id"])
        return {
            "bucket": dict(bucket),
            "buckets": [b["name"] for b in client.list_buckets()],
            "created": {k: created[k] for k in ("name", "permission", "bucket", "region", "forcePathStyle")},  # type: ignore[literal-required]
            "hasSecret": bool(created["secretAccessKey"]),
            "endpointIsServer": created["endpoint"].rstrip("/") == base_url.rstrip("/"),
            "listed": [{"id": k["id"], "keys": sorted(k.keys())} for k in listed],
            "createdId": created["id"],
            "deleteMessage": message,
            "afterDelete": client.list_access_keys("py-client-bucket"),
            "deleteAgain": raised(lambda: client.delete_access_key("py-client-bucket", created["id"])),
            "otherBucket": raised(lambda: client.list_access_keys("no-such-bucket")),
            "bucketAgain": raised(lambda: client.create_bucket("py-client-bucket")),
            "badPermission": raised(lambda: client.create_access_key("py-client-bucket", "x", "admin")),  # type: ignore[arg-type]
        }

    step("server", "storageKeys", storage_keys)

    def projects() -> Dict[str, Any]:
        project = client.create_project("Python site")
        deployment = client.create_deployment(project["id"], "v1")
        linked = client.upload_asset(b"linked", file_name="linked.txt", project_id=project["id"], deployment_id=deployment["id"])
        host = client.add_hostname(project["id"], "app.python-client.example.com")
        origin = client.set_origin(project["id"], host["id"], {"url": "https://origin.example.net"})
        rules = client.set_rules(project["id"], host["id"], {"blockCountries": ["xx"]})
        out = {
            "project": project["name"],
            "projects": [p["name"] for p in client.list_projects()],
            "got": client.get_project(project["id"])["id"] == project["id"],
            "deployments": [d["name"] for d in client.list_deployments(project["id"])],
            "linked": {"projectId": linked["projectId"] == project["id"], "deploymentId": linked["deploymentId"] == deployment["id"]},
            "projectAssets": client.list_assets(project_id=project["id"])["pagination"]["total"],
            "projectSummary": client.summary(project_id=project["id"])["totalFiles"],
            "hostname": {"name": host["hostname"], "verified": host["verified"], "recordType": host["verification"]["type"], "recordName": host["verification"]["name"]},
            "origin": origin["origin"],
            "rules": rules["rules"]["blockCountries"],
            "getHostname": client.get_hostname(project["id"], host["id"])["origin"],
            "hostnames": [h["hostname"] for h in client.list_hostnames(project["id"])],
            "proxyLogs": _proxy_logs(client, host["hostname"]),
            "verify": raised(lambda: client.verify_hostname(project["id"], host["id"])),
            "tls": client.get_hostname_tls(project["id"], host["hostname"]),
            "tlsSettings": client.update_hostname_tls(project["id"], host["id"], redirect_https=True, hsts_max_age=300)["settings"],
            "tlsBadSetting": raised(lambda: client.update_hostname_tls(project["id"], host["id"], hsts_max_age=-1)),
            "tlsIssue": raised(lambda: client.issue_hostname_certificate(project["id"], host["id"])),
            "tlsUpload": raised(lambda: client.upload_hostname_certificate(project["id"], host["id"], "not a certificate", "not a key")),
            "tlsRemoved": client.remove_hostname_certificate(project["id"], host["id"])["certificate"],
            "duplicate": raised(lambda: client.create_project("Python site")),
            "badHostname": raised(lambda: client.add_hostname(project["id"], "http://not-a-name/")),
            "removed": client.remove_hostname(project["id"], host["id"]),
            "deleted": client.delete_project(project["id"]),
        }
        out["afterDelete"] = raised(lambda: client.get_project(project["id"]))
        out["unlinked"] = client.list_assets(search="linked")["pagination"]["total"]
        return out

    step("server", "projects", projects)

    def domains() -> Dict[str, Any]:
        tlds = client.tlds()
        popular = client.popular_tlds()
        found = client.search_tlds("io")
        free = client.search_domain("free-python.com")
        taken = client.search_domain("taken-python.com")
        return {
            "tlds": len(tlds),
            "com": next((t for t in tlds if t["tld"] == ".com"), None),
            "popular": [t["tld"] for t in popular[:3]],
            "searchTlds": {"tld": found[0]["tld"], "match": found[0]["match"]},
            "free": {"query": free["query"], "kind": free["kind"], **{k: free["results"][0][k] for k in ("domain", "available", "status", "provider", "registerDollar")}},  # type: ignore[literal-required]
            "taken": {k: taken["results"][0][k] for k in ("domain", "available", "status")},  # type: ignore[literal-required]
            "label": len(client.search_domain("pythonlabel")["results"]) == len(popular),
            "badQuery": raised(lambda: client.search_domain("bad_name.com")),
            "badTld": raised(lambda: client.search_tlds(" ")),
        }

    step("server", "domains", domains)

    def api_keys() -> Dict[str, Any]:
        created = client.create_api_key(["assets:read"], name="python read-only")
        reader = S3EdgeClient(base_url, created["token"])
        out: Dict[str, Any] = {
            "scopes": created["scopes"],
            "listed": created["id"] in [k["id"] for k in client.list_api_keys()],
            "tokenInListing": any("token" in k for k in client.list_api_keys()),
            "readerLists": reader.list_assets(limit=1)["pagination"]["total"] >= 1,
            "readerUploads": raised(lambda: reader.upload_asset(b"x", file_name="x.txt")),
            "readerUsage": raised(lambda: reader.usage()),
            "wider": raised(lambda: reader.create_api_key(["assets:write"])),
            "deleted": client.delete_api_key(created["id"]),
        }
        out["afterDelete"] = raised(lambda: reader.list_assets())
        bogus = S3EdgeClient(base_url, "s3e_00000000000000000000000000000000_" + "A" * 43)
        out["badKey"] = raised(lambda: bogus.summary())
        out["badKeyUpload"] = raised(lambda: bogus.upload_asset(os.urandom(256 * 1024), file_name="refused.bin"))
        return out

    step("server", "apiKeys", api_keys)

    def rate_limit() -> Dict[str, Any]:
        key = client.create_api_key(["domains:read"], name="python rate limit")
        impatient = S3EdgeClient(base_url, key["token"], retry=RetryPolicy(max_retries=0))
        calls = 0
        refusal: Dict[str, Any] = {"type": None}
        while refusal["type"] is None and calls < 20:
            calls += 1
            refusal = raised(lambda: impatient.search_tlds("io"))
        slept: List[float] = []

        def sleep(seconds: float) -> None:
            slept.append(seconds)
            time.sleep(seconds)

        patient = S3EdgeClient(base_url, key["token"], sleep=sleep)
        started = time.monotonic()
        served = patient.search_tlds("io")[0]["tld"]
        return {"callsUntilRefused": calls, "refusal": refusal, "retriedThenServed": served, "slept": slept, "elapsed": time.monotonic() - started}

    step("server", "rateLimit", rate_limit)
    step("server", "clientRepr", lambda: {"repr": repr(client), "tokenInRepr": token in repr(client) or token in str(vars(client))})


def _proxy_logs(client: S3EdgeClient, hostname: str) -> Dict[str, Any]:
    logs = client.proxy_logs()
    one = client.proxy_logs(hostname=hostname, hours=1)
    return {
        "available": logs["available"],
        "hours": logs["hours"],
        "hasWindow": bool(logs["from"]) and bool(logs["to"]),
        "hostnames": sorted(h["hostname"] for h in logs["hostnames"]),
        "oneHostname": one["hostname"],
        "oneHours": one["hours"],
        "total": logs["requests"]["total"],
        "downloadEvents": sum(1 for e in client.usage(limit=500)["events"] if e["eventType"] == "download"),
        "unknown": raised(lambda: client.proxy_logs(hostname="not-mine.example.org")),
    }


# ------------------------------------------------------------------------------------------------- stub


class Stub:
    """A real HTTP server on 127.0.0.1 that answers from a script: a list of (status, headers, body) per path,
    or a callable for the odd ones. Records what each request carried."""

    def __init__(self) -> None:
        self.script: Dict[str, List[Any]] = {}
        self.released = threading.Event()
        self.seen: List[Dict[str, Any]] = []
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def handle_one(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                if self.headers.get("transfer-encoding", "").lower() == "chunked":
                    body = self._read_chunked()
                else:
                    body = self.rfile.read(length) if length else b""
                stub.seen.append({"method": self.command, "path": self.path, "authorization": self.headers.get("authorization"), "body": body})
                queue = stub.script.get(self.path.split("?")[0]) or []
                answer = queue.pop(0) if len(queue) > 1 else (queue[0] if queue else (404, {}, b'{"success":false,"code":"not_found","message":"no script"}'))
                if callable(answer):
                    answer(self)
                    return
                status, headers, data = answer
                self.send_response(status)
                for k, v in {"content-type": "application/json", "content-length": str(len(data)), **headers}.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _read_chunked(self) -> bytes:
                out = b""
                while True:
                    size = int(self.rfile.readline().strip(), 16)
                    if size == 0:
                        self.rfile.readline()
                        return out
                    out += self.rfile.read(size)
                    self.rfile.readline()

            do_GET = do_POST = do_DELETE = do_PUT = handle_one

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()


OK = (200, {}, b'{"success":true,"tlds":[{"tld":".io"}]}')


def envelope(status: int, code: str, message: str, headers: Optional[Dict[str, str]] = None) -> Tuple[int, Dict[str, str], bytes]:
    return (status, headers or {}, json.dumps({"success": False, "code": code, "message": message}).encode())


def stub_checks() -> None:
    stub = Stub()
    fake = "s3e_" + "f" * 32 + "_stubtokenstubtokenstubtokenstubtokenstubtok"
    slept: List[float] = []
    client = S3EdgeClient(stub.url, fake, retry=RetryPolicy(max_retries=3, backoff_base=0.2, backoff_max=0.5), sleep=slept.append, timeout=2)
    path = "/api/v3/domains/tlds/search"

    def retried_503() -> Dict[str, Any]:
        slept.clear()
        stub.seen.clear()
        stub.script[path] = [envelope(503, "slow_down", "busy", {"retry-after": "1"}), envelope(503, "busy", "busy again", {"retry-after": "0"}), OK]
        tlds = client.search_tlds("io")
        return {"tld": tlds[0]["tld"], "attempts": len(stub.seen), "slept": list(slept), "authorization": stub.seen[0]["authorization"] == f"Bearer {fake}"}

    def backoff_exhausted() -> Dict[str, Any]:
        slept.clear()
        stub.seen.clear()
        stub.script[path] = [envelope(503, "storage_unavailable", "down")]
        err = raised(lambda: client.search_tlds("io"))
        return {"error": err, "attempts": len(stub.seen), "slept": list(slept), "isServiceUnavailable": err["type"] == ServiceUnavailableError.__name__}

    def retry_after_date() -> Dict[str, Any]:
        slept.clear()
        stub.seen.clear()
        stub.script[path] = [envelope(429, "rate_limited", "slow", {"retry-after": formatdate(time.time() + 3, usegmt=True)}), OK]
        client.search_tlds("io")
        return {"attempts": len(stub.seen), "slept": list(slept)}

    def retry_after_too_long() -> Dict[str, Any]:
        slept.clear()
        stub.seen.clear()
        stub.script[path] = [envelope(429, "rate_limited", "come back in an hour", {"retry-after": "3600"})]
        return {"error": raised(lambda: client.search_tlds("io")), "attempts": len(stub.seen), "slept": list(slept)}

    def no_retry_policy() -> Dict[str, Any]:
        stub.seen.clear()
        stub.script[path] = [envelope(503, "busy", "busy", {"retry-after": "1"}), OK]
        once = S3EdgeClient(stub.url, fake, retry=RetryPolicy(max_retries=0), sleep=slept.append)
        return {"error": raised(lambda: once.search_tlds("io")), "attempts": len(stub.seen)}

    def upload_replayed() -> Dict[str, Any]:
        slept.clear()
        stub.seen.clear()
        asset = {"success": True, "asset": {"id": "a1", "size": 70000}}
        stub.script["/api/v3/cdn/assets"] = [envelope(503, "slow_down", "too many uploads", {"retry-after": "0"}), (201, {}, json.dumps(asset).encode())]
        data = os.urandom(70000)
        f = io.BytesIO(data)
        got = client.upload_asset(f, file_name="replay.bin")
        bodies = [s["body"] for s in stub.seen]
        r, w = os.pipe()
        os.write(w, b"once only")
        os.close(w)
        stub.seen.clear()
        stub.script["/api/v3/cdn/assets"] = [envelope(503, "slow_down", "too many uploads", {"retry-after": "0"}), (201, {}, json.dumps(asset).encode())]
        with os.fdopen(r, "rb") as pipe:
            pipe_err = raised(lambda: client.upload_asset(pipe, file_name="pipe.bin"))
        return {
            "asset": got["id"],
            "attempts": len(bodies),
            "sameBody": len(bodies) == 2 and bodies[0] == bodies[1],
            "carriesFile": len(bodies) == 2 and data in bodies[1],
            "pipe": pipe_err,
            "pipeAttempts": len(stub.seen),
        }

    def timeout() -> Dict[str, Any]:
        def silent(h: http.server.BaseHTTPRequestHandler) -> None:
            stub.released.wait(30)  # no answer until the stub closes

        stub.script["/api/v3/cdn/summary"] = [silent]
        quick = S3EdgeClient(stub.url, fake, timeout=0.3)
        started = time.monotonic()
        err = raised(lambda: quick.summary())
        return {"error": err, "attempts": sum(1 for s in stub.seen if s["path"] == "/api/v3/cdn/summary"), "elapsed": time.monotonic() - started}

    def refused() -> Dict[str, Any]:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        return raised(lambda: S3EdgeClient(f"http://127.0.0.1:{port}", fake, timeout=2).summary())

    def cut_download(work: str) -> Dict[str, Any]:
        def cut(h: http.server.BaseHTTPRequestHandler) -> None:
            h.send_response(200)
            h.send_header("content-type", "application/octet-stream")
            h.send_header("content-length", "100")
            h.end_headers()
            h.wfile.write(b"x" * 50)
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_WR)

        stub.script["/api/v3/cdn/assets/cut/download"] = [cut]
        target = os.path.join(work, "cut.bin")
        return {
            "bytes": raised(lambda: client.download_asset("cut")),
            "toPath": raised(lambda: client.download_asset_to("cut", target)),
            "noFile": not os.path.exists(target),
            "noPart": not any(f.endswith(".part") for f in os.listdir(work)),
        }

    def not_json() -> Dict[str, Any]:
        stub.script["/api/v3/cdn/usage"] = [(502, {"content-type": "text/html"}, b"<html>bad gateway</html>")]
        stub.script["/api/v3/projects"] = [(200, {"content-type": "text/html"}, b"<html>a login page</html>")]
        return {"badGateway": raised(lambda: client.usage()), "notEnvelope": raised(lambda: client.list_projects())}

    def quoting() -> Dict[str, Any]:
        stub.seen.clear()
        stub.script["/api/v3/cdn/assets/a%2Fb%3F/download"] = [(200, {"content-type": "application/octet-stream"}, b"ok")]
        data = client.download_asset("a/b?")
        return {"path": stub.seen[0]["path"], "data": data.decode()}

    def bad_arguments() -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for name, make in {
            "keyWithNewline": lambda: S3EdgeClient(stub.url, fake + "\r\nX-Evil: 1"),
            "emptyKey": lambda: S3EdgeClient(stub.url, ""),
            "notHttp": lambda: S3EdgeClient("ftp://example.com", fake),
            "emptyId": lambda: client.delete_asset(""),
        }.items():
            try:
                make()
                out[name] = None
            except ValueError as err:
                out[name] = {"message": str(err), "leaks": fake in str(err)}
        return out

    with tempfile.TemporaryDirectory() as work:
        step("stub", "retried503", retried_503)
        step("stub", "backoffExhausted", backoff_exhausted)
        step("stub", "retryAfterDate", retry_after_date)
        step("stub", "retryAfterTooLong", retry_after_too_long)
        step("stub", "noRetryPolicy", no_retry_policy)
        step("stub", "uploadReplayed", upload_replayed)
        step("stub", "timeout", timeout)
        step("stub", "refused", refused)
        step("stub", "cutDownload", lambda: cut_download(work))
        step("stub", "notJson", not_json)
        step("stub", "quoting", quoting)
        step("stub", "badArguments", bad_arguments)
        step("stub", "backoffBounds", lambda: [RetryPolicy(backoff_base=0.5, backoff_max=8, max_retries=6).delay(n, None, rand=r) for n in (0, 1, 2, 5, 6) for r in (lambda: 0.0, lambda: 1.0)])
    stub.close()
    results["stub"]["fakeTokenLeaks"] = [repr(e) for e in errors_seen if fake in str(e) or fake in repr(e) or fake in json.dumps(e.body)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--part", action="append", choices=["package", "server", "stub"], help="default: all three")
    args = parser.parse_args()
    token = os.environ["S3EDGE_TOKEN"]
    parts = args.part or ["package", "server", "stub"]
    started = time.monotonic()
    if "package" in parts:
        package_checks()
    if "server" in parts:
        with tempfile.TemporaryDirectory() as work:
            server_checks(args.base_url, token, work)
    if "stub" in parts:
        stub_checks()
    results["leaks"] = {"token": [repr(e) for e in errors_seen if token in str(e) or token in repr(e) or token in json.dumps(e.body)]}
    results["seconds"] = {"total": round(time.monotonic() - started, 2)}
    json.dump(results, sys.stdout, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
