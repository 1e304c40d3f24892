"""Typed shapes of what the client returns: the ``data`` of the server's answers, as plain dicts.

They follow the route schemas (src/api/v3/schemas.ts) and SPEC.md §2; a type checker sees the
fields, at run time they are the decoded JSON objects.
"""

from __future__ import annotations

from typing import Dict, List, Literal, Optional, TypedDict, Union

__all__ = [
    "Visibility",
    "Kind",
    "Permission",
    "AssetMetadata",
    "Asset",
    "AssetListItem",
    "Pagination",
    "AssetPage",
    "SignedUrl",
    "Analytics",
    "SeriesPoint",
    "Space",
    "Credits",
    "Summary",
    "UsageEvent",
    "LedgerEntry",
    "UsageResult",
    "Anomaly",
    "TrafficSource",
    "ProxyLogs",
    "ApiKeyInfo",
    "CreatedApiKey",
    "BucketView",
    "StorageAccessKey",
    "CreatedStorageAccessKey",
    "Project",
    "Deployment",
    "HostnameOrigin",
    "HostnameRules",
    "VerificationRecord",
    "Hostname",
    "TlsSettings",
    "TlsCertificate",
    "TlsStatus",
    "Restrictions",
    "Tld",
    "TldMatch",
    "DomainResult",
    "DomainSearch",
]

Visibility = Literal["public", "private"]
Kind = Literal["file", "artifact"]
Permission = Literal["read", "read_write"]

# `file-name` is not an identifier: the functional form.
AssetMetadata = TypedDict("AssetMetadata", {"file-name": str, "kind": str, "sha256": str, "visibility": str})


class AssetListItem(TypedDict):
    """An asset as the list shows it (SPEC.md 2.1: no userId, projectId, deploymentId, sha256, etag, metadata)."""

    id: str
    storageName: str
    key: str
    fileName: str
    contentType: str
    size: int
    publicUrl: str
    visibility: str
    kind: str
    createdAt: str
    updatedAt: str


class Asset(AssetListItem):
    """SPEC.md 2.1: an uploaded file."""

    userId: str
    projectId: Optional[str]
    deploymentId: Optional[str]
    sha256: str
    etag: str
    metadata: AssetMetadata


class Pagination(TypedDict):
    page: int
    limit: int
    total: int
    pages: int


class AssetPage(TypedDict):
    """One page of the asset list."""

    assets: List[AssetListItem]
    pagination: Pagination


class SignedUrl(TypedDict):
    url: str
    expiresAt: str


class SeriesPoint(TypedDict):
    timestamp: str
    requests: int
    bytes: int
    cachedBytes: int


class Analytics(TypedDict):
    """SPEC.md 2.4: the last 24 hours of CDN traffic."""

    enabled: bool
    available: bool
    hostname: str
    requests: int
    bytes: int
    cachedBytes: int
    cacheHitRatio: float
    statusCodes: Dict[str, int]
    countries: Dict[str, int]
    series: List[SeriesPoint]


class Space(TypedDict):
    id: str
    name: str
    status: str
    suspendedAt: Optional[str]


class Credits(TypedDict):
    """SPEC.md 2.6, and what happens at zero (docs/API.md "Usage and credits")."""

    enabled: bool
    balance: float
    usedCredits: float
    lowCreditThreshold: float
    projectedDailyStorageCredits: float
    freeMonthlyCredits: float
    uploadCreditUnitBytes: float
    uploadCreditsPerUnit: float
    transferCreditsPerGb: float
    storageCreditsPerGbDay: float
    low: bool
    atZero: Literal["refuse-uploads", "suspend-delivery"]
    deliveryGraceHours: float
    depletedAt: Optional[str]
    deliverySuspendsAt: Optional[str]
    deliverySuspended: bool


class Summary(TypedDict):
    """SPEC.md 2.3: the ``data`` of GET /api/v3/cdn/summary."""

    totalFiles: int
    storageBytes: int
    uploadedBytes: int
    downloadedBytes: int
    uploadsLast24h: int
    recentAssets: List[Asset]
    analytics: Analytics
    configured: bool
    storageName: str
    space: Space
    credits: Credits


class _KeyMetadata(TypedDict):
    key: str


class UsageEvent(TypedDict):
    """SPEC.md 2.7."""

    id: str
    userId: str
    assetId: str
    eventType: str
    source: str
    bytes: int
    hostname: str
    country: str
    statusCode: int
    metadata: _KeyMetadata
    createdAt: str


class LedgerEntry(TypedDict):
    """SPEC.md 2.8 (``metadata`` carries ``key``, or a ``note`` for grants)."""

    id: str
    userId: str
    assetId: str
    eventType: str
    bytes: int
    rate: float
    credits: float
    balanceAfter: float
    metadata: Dict[str, str]
    createdAt: str


class StorageQuotaUser(TypedDict):
    storedBytes: int
    """Everything the account stores: its buckets (objects, noncurrent versions, unfinished uploads' parts) and its assets."""
    assetBytes: int
    quotaBytes: Optional[int]
    """None: no quota."""


class StorageQuotaBucket(TypedDict):
    name: str
    storedBytes: int
    quotaBytes: Optional[int]


class StorageQuota(TypedDict):
    """GET /api/v3/storage/quota's ``data``."""

    user: StorageQuotaUser
    buckets: List[StorageQuotaBucket]


class UsageResult(TypedDict):
    """GET /api/v3/cdn/usage without its ``success``."""

    events: List[UsageEvent]
    creditLedger: List[LedgerEntry]
    credits: Credits


class Anomaly(TypedDict):
    id: str
    hostname: str
    kind: str
    severity: str
    startedAt: str
    endedAt: Optional[str]
    observed: float
    baseline: float
    detail: Dict[str, Union[str, float]]


class _Risk(TypedDict):
    index: int
    rating: str


class TrafficSource(TypedDict):
    ip: str
    requests: int
    bytes: int
    blocked: int
    risk: _Risk


class _ProxyHostname(TypedDict):
    hostname: str
    kind: str
    projectId: Optional[str]
    verified: bool
    requests: int
    blocked: int


class _RequestCounts(TypedDict):
    total: int
    allowed: int
    blocked: int
    blockedBy: Dict[str, int]
    serverErrors: int


class _ProxyPoint(TypedDict):
    start: str
    requests: int
    allowed: int
    blocked: int
    bytes: int


class _ProxySeries(TypedDict):
    bucketSeconds: int
    points: List[_ProxyPoint]


class _RiskSignal(TypedDict):
    name: str
    value: float
    weight: float
    points: float


class _RiskIndex(TypedDict):
    index: int
    rating: str
    signals: List[_RiskSignal]


class _GeoShare(TypedDict):
    country: str
    code: str
    requests: int
    share: float


class _GeoConcentration(TypedDict):
    index: float
    topCountry: Optional[str]
    topShare: float


# SPEC.md 2.11, field names as docs/API.md "Proxy logs" gives them (functional form: `from` is a keyword).
ProxyLogs = TypedDict(
    "ProxyLogs",
    {
        "available": bool,
        "hostname": Optional[str],
        "hours": int,
        "from": str,
        "to": str,
        "hostnames": List[_ProxyHostname],
        "requests": _RequestCounts,
        "bytes": int,
        "series": _ProxySeries,
        "risk": _RiskIndex,
        "geo": List[_GeoShare],
        "geoConcentration": _GeoConcentration,
        "topSources": List[TrafficSource],
        "topSourcesByBytes": List[TrafficSource],
        "anomalies": List[Anomaly],
    },
)


class ApiKeyInfo(TypedDict):
    """An API key as listed: never its token."""

    id: str
    name: str
    scopes: List[str]
    createdAt: str


class CreatedApiKey(ApiKeyInfo):
    """A new API key: ``token`` is in this answer only."""

    token: str


class BucketView(TypedDict):
    name: str
    region: str
    public: bool
    objects: int
    createdAt: str


class StorageAccessKey(TypedDict):
    """SPEC.md 2.9: a bucket's S3 access key as listed, never its secret."""

    id: str
    name: str
    permission: str
    bucket: str
    accessKeyId: str
    createdAt: str


class CreatedStorageAccessKey(StorageAccessKey):
    """A new S3 access key with its connection details; ``secretAccessKey`` is in this answer only."""

    secretAccessKey: str
    endpoint: str
    region: str
    forcePathStyle: bool


class Project(TypedDict):
    id: str
    name: str
    createdAt: str


class Deployment(TypedDict):
    id: str
    projectId: str
    name: str
    createdAt: str


# An origin as a hostname shows it: {"kind": "url", "url", "preserveHost"} or
# {"kind": "bucket", "bucket", "indexDocument", "errorDocument"}.
HostnameOrigin = Dict[str, Union[str, bool, None]]


class _RateLimitRule(TypedDict):
    requestsPerSecond: float
    burst: float
    banAfter: float
    banWindowSeconds: float
    banSeconds: float
    maxBanSeconds: float


class HostnameRules(TypedDict):
    allowIps: List[str]
    blockIps: List[str]
    blockCountries: List[str]
    allowedMethods: List[str]
    maxBodyBytes: Optional[float]
    rateLimit: Optional[_RateLimitRule]


class VerificationRecord(TypedDict):
    name: str
    type: str
    value: str


class Hostname(TypedDict):
    """A project hostname the edge proxy serves once verified."""

    id: str
    hostname: str
    projectId: str
    origin: Optional[HostnameOrigin]
    rules: HostnameRules
    verified: bool
    verifiedAt: Optional[str]
    verifiedBy: Optional[str]
    verification: VerificationRecord
    createdAt: str
    updatedAt: str


class TlsSettings(TypedDict):
    redirectHttps: bool
    """Plain HTTP is answered 308 to https:// (once the hostname has a certificate)."""
    hstsMaxAge: int
    """Strict-Transport-Security max-age in seconds; 0: no header."""
    hstsIncludeSubdomains: bool
    minTls: Literal["1.2", "1.3"]


class TlsCertificate(TypedDict):
    """The certificate a hostname serves (never its key)."""

    source: Literal["acme", "uploaded"]
    fingerprint: str
    names: List[str]
    notBefore: str
    notAfter: str
    renewsAt: Optional[str]
    """When ACME renews it; None for an uploaded one."""
    expired: bool


class TlsStatus(TypedDict):
    """A hostname's HTTPS: GET .../hostnames/:hostname/tls's ``tls``."""

    hostname: str
    state: Literal["unverified", "acme-off", "pending", "issuing", "issued", "failed", "uploaded"]
    summary: str
    acme: bool
    certificate: Optional[TlsCertificate]
    lastError: Optional[str]
    failures: int
    nextAttemptAt: Optional[str]
    settings: TlsSettings


class Restrictions(TypedDict):
    text: str
    requiresLocalPresence: bool


class _Prices(TypedDict):
    registerDollar: float
    registerNaira: float
    renewDollar: float
    renewNaira: float
    transferDollar: float
    transferNaira: float
    minYears: int
    maxYears: int
    restrictions: Restrictions
    bonusAmount: Optional[float]
    bonusAmountUSD: Optional[float]
    bonusEndingDate: Optional[str]


class Tld(_Prices):
    """A TLD of the catalogue with its yearly prices and active promotion."""

    tld: str
    extension: str
    popular: bool
    popularRank: Optional[int]


class TldMatch(Tld):
    """A TLD search hit: ``match`` is ``exact``, ``label`` or ``prefix``."""

    match: str


class DomainResult(_Prices):
    """SPEC.md 2.10: one name's availability and prices."""

    domain: str
    domainUnicode: str
    tld: str
    available: bool
    status: str
    purchaseType: str
    provider: str
    checkedBy: Optional[str]
    checkedAt: str
    cached: bool
    reason: Optional[str]


class DomainSearch(TypedDict):
    """POST /api/v3/domains/search without its ``success``: the normalized query and one result per name."""

    query: str
    kind: str
    results: List[DomainResult]
