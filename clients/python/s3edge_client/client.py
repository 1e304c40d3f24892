"""S3EdgeClient: the management API (/api/v3 and /storage) of an s3edge gateway, one method per call.

Methods unwrap the envelopes as the TypeScript client does (src/client/index.ts): ``upload_asset()``
returns the asset, ``summary()`` the ``data`` object, ``list_access_keys()`` the keys. A failure
raises an :class:`~s3edge_client.errors.S3EdgeError` subclass with the status, the envelope's code
and message and the Retry-After; 429 and 503 are retried first (:class:`RetryPolicy`).
"""

from __future__ import annotations

import http.client
import mimetypes
import os
import ssl
import tempfile
import time
from typing import IO, Any, Callable, Dict, Iterator, List, Literal, Mapping, Optional, Union, cast

from ._http import CHUNK_SIZE, MAX_ERROR_BODY, Response, RetryPolicy, Source, Transport, error_from, multipart_body, path_segment
from .errors import TransportError
from .types import (
    ApiKeyInfo,
    Asset,
    AssetListItem,
    AssetPage,
    BucketView,
    CreatedApiKey,
    CreatedStorageAccessKey,
    Deployment,
    DomainSearch,
    Hostname,
    Kind,
    Permission,
    Project,
    ProxyLogs,
    SignedUrl,
    StorageAccessKey,
    StorageQuota,
    Summary,
    Tld,
    TldMatch,
    TlsStatus,
    UsageResult,
    Visibility,
)

__all__ = ["S3EdgeClient", "Destination"]

__version__ = "0.1.0"

Destination = Union[str, "os.PathLike[str]", IO[bytes]]


class S3EdgeClient:
    """A client of one gateway with one API key (``Authorization: Bearer <api_key>``).

    ``timeout`` bounds connecting and each wait for bytes (seconds), not a whole transfer. ``retry``
    says how 429 and 503 answers are retried (default: up to 3 times, honouring Retry-After);
    ``RetryPolicy(max_retries=0)`` turns retries off. ``ssl_context`` is for an https:// base URL with a
    private CA. The key is never shown: not in ``repr()``, nor in any exception.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 30.0,
        retry: Optional[RetryPolicy] = None,
        ssl_context: Optional[ssl.SSLContext] = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._http = Transport(
            base_url,
            api_key,
            timeout=timeout,
            retry=retry if retry is not None else RetryPolicy(),
            user_agent=f"s3edge-client-python/{__version__}",
            ssl_context=ssl_context,
            sleep=sleep,
        )

    def __repr__(self) -> str:
        return f"S3EdgeClient(base_url={self._http.base_url!r})"

    @property
    def base_url(self) -> str:
        return self._http.base_url

    @property
    def retry(self) -> RetryPolicy:
        return self._http.retry

    def request(self, method: str, path: str, *, query: Optional[Mapping[str, Any]] = None, json_body: Any = None) -> Dict[str, Any]:
        """Any JSON route (``/api/v3/...``), authenticated and retried: the whole envelope once ``success`` is true."""
        return self._http.json(method, path, query=query, json_body=json_body)

    # Assets (scopes assets:read, assets:write)

    def upload_asset(
        self,
        file: Source,
        *,
        file_name: Optional[str] = None,
        content_type: Optional[str] = None,
        visibility: Optional[Visibility] = None,
        kind: Optional[Kind] = None,
        project_id: Optional[str] = None,
        deployment_id: Optional[str] = None,
    ) -> Asset:
        """Uploads one file: ``bytes``, a path (``str`` or ``os.PathLike``) or a binary file object.

        The file is streamed, never read whole. ``file_name`` defaults to the path's (or the file
        object's) base name, else ``file``; ``content_type`` to the type its extension suggests, else
        ``application/octet-stream``. A file object that cannot seek is sent chunked, and once only
        (no retry).
        """
        name = file_name if file_name is not None else _default_name(file)
        ctype = content_type or mimetypes.guess_type(name)[0] or "application/octet-stream"
        fields = [
            (field, value)
            for field, value in (("visibility", visibility), ("kind", kind), ("projectId", project_id), ("deploymentId", deployment_id))
            if value is not None
        ]
        boundary = f"s3edge-python-{os.urandom(16).hex()}"
        body, form_type = multipart_body(fields, "file", name, ctype, file, boundary)
        return cast(Asset, self._http.json("POST", "/api/v3/cdn/assets", body=body, content_type=form_type)["asset"])

    def list_assets(
        self,
        page: Optional[int] = None,
        limit: Optional[int] = None,
        search: Optional[str] = None,
        kind: Optional[Kind] = None,
        *,
        project_id: Optional[str] = None,
        sort: Optional[str] = None,
        order: Optional[str] = None,
    ) -> AssetPage:
        """One page of the caller's assets (``limit`` at most 200), newest first unless ``sort`` says otherwise."""
        query = {"page": page, "limit": limit, "search": search, "kind": kind, "projectId": project_id, "sort": sort, "order": order}
        res = self._http.json("GET", "/api/v3/cdn/assets", query=query)
        return {"assets": res["assets"], "pagination": res["pagination"]}

    def iter_assets(
        self,
        search: Optional[str] = None,
        kind: Optional[Kind] = None,
        *,
        project_id: Optional[str] = None,
        sort: Optional[str] = None,
        order: Optional[str] = None,
        page_size: int = 100,
    ) -> Iterator[AssetListItem]:
        """Every matching asset, a page at a time (uploads and deletes meanwhile can shift the pages)."""
        page = 1
        while True:
            res = self.list_assets(page, page_size, search, kind, project_id=project_id, sort=sort, order=order)
            yield from res["assets"]
            if page >= res["pagination"]["pages"]:
                return
            page += 1

    def download_asset(self, asset_id: str, *, byte_range: Optional[str] = None) -> bytes:
        """The asset's bytes (``byte_range``: a Range header value such as ``bytes=0-99``)."""
        return b"".join(self.iter_download(asset_id, byte_range=byte_range))

    def download_asset_to(self, asset_id: str, destination: Destination, *, chunk_size: int = CHUNK_SIZE) -> int:
        """Streams the asset into a path or a binary file object, ``chunk_size`` bytes at a time; returns the bytes written.

        A path is written whole or not at all: into a temporary file beside it, renamed over it once complete.
        """
        if isinstance(destination, (str, os.PathLike)):
            target = os.fspath(destination)
            fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".part", dir=os.path.dirname(os.path.abspath(target)))
            try:
                with os.fdopen(fd, "wb") as out:
                    written = self._copy(asset_id, out, chunk_size)
                os.replace(tmp, target)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
            return written
        return self._copy(asset_id, destination, chunk_size)

    def _copy(self, asset_id: str, out: IO[bytes], chunk_size: int) -> int:
        written = 0
        for chunk in self.iter_download(asset_id, chunk_size=chunk_size):
            out.write(chunk)
            written += len(chunk)
        return written

    def iter_download(self, asset_id: str, *, byte_range: Optional[str] = None, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
        """The asset's bytes as they arrive. The request is sent at once (a 404 raises here); a body shorter
        than its Content-Length raises TransportError ``incomplete_download``: a cut download never passes
        for a whole one."""
        headers = {"Range": byte_range} if byte_range else {}
        path = f"/api/v3/cdn/assets/{path_segment(asset_id)}/download"
        res = self._http.send("GET", path, headers=headers)
        if res.status >= 400:
            raise error_from(res.status, res.headers, res.read_all(MAX_ERROR_BODY))
        return _chunks(res, path, chunk_size)

    def delete_asset(self, asset_id: str) -> str:
        """Deletes the asset; returns the server's message."""
        return cast(str, self._http.json("DELETE", f"/api/v3/cdn/assets/{path_segment(asset_id)}")["message"])

    def signed_url(self, asset_id: str, expires_in: Optional[int] = None) -> SignedUrl:
        """A signed, expiring CDN URL of an asset (private ones too); ``expires_in`` in seconds."""
        res = self._http.json("POST", f"/api/v3/cdn/assets/{path_segment(asset_id)}/signed-url", json_body={} if expires_in is None else {"expiresIn": expires_in})
        return {"url": res["url"], "expiresAt": res["expiresAt"]}

    # Account reports (assets:read, usage:read)

    def summary(self, project_id: Optional[str] = None) -> Summary:
        """Storage, 24-hour analytics, space and credits; with ``project_id``, that project's asset counts."""
        return cast(Summary, self._http.json("GET", "/api/v3/cdn/summary", query={"projectId": project_id})["data"])

    def usage(self, limit: Optional[int] = None) -> UsageResult:
        """The latest usage events and ledger entries (``limit`` at most 500), and the credits state."""
        res = self._http.json("GET", "/api/v3/cdn/usage", query={"limit": limit})
        return {"events": res["events"], "creditLedger": res["creditLedger"], "credits": res["credits"]}

    def storage_quota(self) -> StorageQuota:
        """What the account and each of its buckets store, against their storage quotas (None: no quota)."""
        return cast(StorageQuota, self._http.json("GET", "/api/v3/storage/quota")["data"])

    def proxy_logs(self, hostname: Optional[str] = None, hours: Optional[int] = None) -> ProxyLogs:
        """Edge traffic of the caller's hostnames: counts, risk, geography, top sources, anomalies."""
        return cast(ProxyLogs, self._http.json("GET", "/api/v3/cdn/proxy-logs", query={"hostname": hostname, "hours": hours})["data"])

    # API keys (api-keys:manage)

    def list_api_keys(self) -> List[ApiKeyInfo]:
        return cast(List[ApiKeyInfo], self._http.json("GET", "/api/v3/api-keys")["apiKeys"])

    def create_api_key(self, scopes: List[str], name: Optional[str] = None) -> CreatedApiKey:
        """A new key with some of this key's scopes; its ``token`` is shown in this answer only."""
        body: Dict[str, Any] = {"scopes": list(scopes)}
        if name is not None:
            body["name"] = name
        return cast(CreatedApiKey, self._http.json("POST", "/api/v3/api-keys", json_body=body)["apiKey"])

    def delete_api_key(self, key_id: str) -> str:
        return cast(str, self._http.json("DELETE", f"/api/v3/api-keys/{path_segment(key_id)}")["message"])

    # Buckets (buckets:manage) and their S3 access keys (storage-keys:manage)

    def list_buckets(self) -> List[BucketView]:
        return cast(List[BucketView], self._http.json("GET", "/api/v3/buckets")["buckets"])

    def create_bucket(self, name: str) -> BucketView:
        """A bucket in the gateway's region (S3 naming rules; ConflictError when the name is taken)."""
        return cast(BucketView, self._http.json("POST", "/api/v3/buckets", json_body={"name": name})["bucket"])

    def list_access_keys(self, bucket: str) -> List[StorageAccessKey]:
        """The S3 access keys of one of the caller's buckets (never their secrets)."""
        return cast(List[StorageAccessKey], self._http.json("GET", f"/storage/buckets/{path_segment(bucket)}/access-keys")["accessKeys"])

    def create_access_key(self, bucket: str, name: str, permission: Permission = "read") -> CreatedStorageAccessKey:
        """An S3 key limited to ``bucket``: ``read``, or ``read_write``. ``secretAccessKey`` is in this answer only."""
        res = self._http.json("POST", f"/storage/buckets/{path_segment(bucket)}/access-keys", json_body={"name": name, "permission": permission})
        return cast(CreatedStorageAccessKey, res["accessKey"])

    def delete_access_key(self, bucket: str, key_id: str) -> str:
        return cast(str, self._http.json("DELETE", f"/storage/buckets/{path_segment(bucket)}/access-keys/{path_segment(key_id)}")["message"])

    # Projects, deployments and hostnames (projects:read, projects:write)

    def list_projects(self) -> List[Project]:
        return cast(List[Project], self._http.json("GET", "/api/v3/projects")["projects"])

    def create_project(self, name: str) -> Project:
        return cast(Project, self._http.json("POST", "/api/v3/projects", json_body={"name": name})["project"])

    def get_project(self, project_id: str) -> Project:
        return cast(Project, self._http.json("GET", _project(project_id))["project"])

    def delete_project(self, project_id: str) -> str:
        """Deletes the project with its deployments and hostnames; its assets stay, unlinked."""
        return cast(str, self._http.json("DELETE", _project(project_id))["message"])

    def list_deployments(self, project_id: str) -> List[Deployment]:
        return cast(List[Deployment], self._http.json("GET", f"{_project(project_id)}/deployments")["deployments"])

    def create_deployment(self, project_id: str, name: str) -> Deployment:
        return cast(Deployment, self._http.json("POST", f"{_project(project_id)}/deployments", json_body={"name": name})["deployment"])

    def list_hostnames(self, project_id: str) -> List[Hostname]:
        return cast(List[Hostname], self._http.json("GET", f"{_project(project_id)}/hostnames")["hostnames"])

    def add_hostname(self, project_id: str, hostname: str, *, origin: Optional[Mapping[str, Any]] = None, rules: Optional[Mapping[str, Any]] = None) -> Hostname:
        """Adds an unverified hostname; its ``verification`` is the TXT record to publish before verify_hostname()."""
        body: Dict[str, Any] = {"hostname": hostname}
        if origin is not None:
            body["origin"] = dict(origin)
        if rules is not None:
            body["rules"] = dict(rules)
        return cast(Hostname, self._http.json("POST", f"{_project(project_id)}/hostnames", json_body=body)["hostname"])

    def get_hostname(self, project_id: str, hostname_id: str) -> Hostname:
        return cast(Hostname, self._http.json("GET", _hostname(project_id, hostname_id))["hostname"])

    def remove_hostname(self, project_id: str, hostname_id: str) -> str:
        return cast(str, self._http.json("DELETE", _hostname(project_id, hostname_id))["message"])

    def set_origin(self, project_id: str, hostname_id: str, origin: Mapping[str, Any]) -> Hostname:
        """``{"url": "https://origin.example.net"}`` or ``{"bucket": "my-site", "indexDocument": "index.html"}``."""
        return cast(Hostname, self._http.json("PUT", f"{_hostname(project_id, hostname_id)}/origin", json_body=dict(origin))["hostname"])

    def set_rules(self, project_id: str, hostname_id: str, rules: Mapping[str, Any]) -> Hostname:
        """Replaces the hostname's protection rules (``{}`` clears them)."""
        return cast(Hostname, self._http.json("PUT", f"{_hostname(project_id, hostname_id)}/rules", json_body=dict(rules))["hostname"])

    def verify_hostname(self, project_id: str, hostname_id: str) -> Hostname:
        """Looks the TXT record up; ConflictError ``verification_failed`` says what DNS had instead."""
        return cast(Hostname, self._http.json("POST", f"{_hostname(project_id, hostname_id)}/verify")["hostname"])

    # A hostname's HTTPS (projects:read, projects:write): ``hostname`` is its id or its name

    def get_hostname_tls(self, project_id: str, hostname: str) -> TlsStatus:
        """The certificate's state (``state``, ``summary``), the certificate, the last failure, the settings."""
        return cast(TlsStatus, self._http.json("GET", f"{_hostname(project_id, hostname)}/tls")["tls"])

    def update_hostname_tls(
        self,
        project_id: str,
        hostname: str,
        *,
        redirect_https: Optional[bool] = None,
        hsts_max_age: Optional[int] = None,
        hsts_include_subdomains: Optional[bool] = None,
        min_tls: Optional[Literal["1.2", "1.3"]] = None,
    ) -> TlsStatus:
        """Changes the settings given (``hsts_max_age`` 0 to 63072000 seconds, 0: no header); the rest stay."""
        given = {"redirectHttps": redirect_https, "hstsMaxAge": hsts_max_age, "hstsIncludeSubdomains": hsts_include_subdomains, "minTls": min_tls}
        body = {k: v for k, v in given.items() if v is not None}
        return cast(TlsStatus, self._http.json("PATCH", f"{_hostname(project_id, hostname)}/tls", json_body=body)["tls"])

    def issue_hostname_certificate(self, project_id: str, hostname: str) -> TlsStatus:
        """Asks for a certificate now (202); the server's ACME job issues it on its next round."""
        return cast(TlsStatus, self._http.json("POST", f"{_hostname(project_id, hostname)}/tls/issue")["tls"])

    def upload_hostname_certificate(self, project_id: str, hostname: str, certificate: str, private_key: str) -> TlsStatus:
        """Serves an uploaded certificate (PEM chain, the hostname's first) with its key; BadRequestError says what to fix."""
        body = {"certificate": certificate, "privateKey": private_key}
        return cast(TlsStatus, self._http.json("PUT", f"{_hostname(project_id, hostname)}/tls/certificate", json_body=body)["tls"])

    def remove_hostname_certificate(self, project_id: str, hostname: str) -> TlsStatus:
        """Drops the hostname's certificate and key (with ACME on, a new one is requested at once)."""
        return cast(TlsStatus, self._http.json("DELETE", f"{_hostname(project_id, hostname)}/tls/certificate")["tls"])

    # Domains (domains:read; rate-limited per key: RateLimitedError past the limit, after the retries)

    def tlds(self) -> List[Tld]:
        """Every TLD of the catalogue with its prices and active promotion."""
        return cast(List[Tld], self._http.json("GET", "/api/v3/domains/tlds")["tlds"])

    def popular_tlds(self) -> List[Tld]:
        """The popular TLDs, in their order."""
        return cast(List[Tld], self._http.json("GET", "/api/v3/domains/tlds/popular")["tlds"])

    def search_tlds(self, q: str) -> List[TldMatch]:
        """TLDs matching an extension (``io``, ``.co.uk``), exact match first."""
        return cast(List[TldMatch], self._http.json("GET", "/api/v3/domains/tlds/search", query={"q": q})["tlds"])

    def search_domain(self, query: str) -> DomainSearch:
        """Availability and prices of a name (``example.com``), or of a bare label under the popular TLDs."""
        res = self._http.json("POST", "/api/v3/domains/search", json_body={"query": query})
        return {"query": res["query"], "kind": res["kind"], "results": res["results"]}


def _chunks(res: Response, path: str, chunk_size: int) -> Iterator[bytes]:
    declared = res.headers.get("content-length")
    expected = int(declared) if declared is not None and declared.isdigit() else None
    received = 0
    try:
        while True:
            try:
                chunk = res.raw.read(chunk_size)
            except (OSError, http.client.HTTPException) as err:
                raise TransportError(res.status, "incomplete_download", f"GET {path}: cut after {received} bytes ({type(err).__name__})") from None
            if not chunk:
                break
            received += len(chunk)
            yield chunk
    finally:
        res.close()
    if expected is not None and received != expected:
        raise TransportError(res.status, "incomplete_download", f"GET {path}: {received} of {expected} bytes came")


def _default_name(file: Source) -> str:
    if isinstance(file, (str, os.PathLike)):
        return os.path.basename(os.fspath(file)) or "file"
    name = getattr(file, "name", None)
    if isinstance(name, str) and name and not name.startswith("<"):
        return os.path.basename(name) or "file"
    return "file"


def _project(project_id: str) -> str:
    return f"/api/v3/projects/{path_segment(project_id)}"


def _hostname(project_id: str, hostname_id: str) -> str:
    return f"{_project(project_id)}/hostnames/{path_segment(hostname_id)}"
