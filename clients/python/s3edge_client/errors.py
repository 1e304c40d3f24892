"""The exceptions of the client: one base class, a subclass per kind of failure.

Every failure the server answered carries its HTTP ``status``, the error envelope's ``code`` and
``message`` (``{"success": false, "message": ..., "code": ...}``, docs/API.md "Authentication and
errors"), the ``Retry-After`` it sent (in seconds) and the whole error ``body``. A failure with no
answer (connection refused, a timeout, a cut download) is a :class:`TransportError` whose ``status``
is ``None``. None of them holds the API key or the request's headers.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Type

__all__ = [
    "S3EdgeError",
    "BadRequestError",
    "AuthError",
    "ForbiddenError",
    "InsufficientCreditsError",
    "NotFoundError",
    "ConflictError",
    "PayloadTooLargeError",
    "UnsupportedMediaTypeError",
    "RateLimitedError",
    "ServerError",
    "ServiceUnavailableError",
    "TransportError",
    "error_for_status",
]


class S3EdgeError(Exception):
    """A request that did not succeed.

    ``status`` is the HTTP status (``None`` when no answer came), ``code`` the envelope's error code
    (``not_found``, ``rate_limited``, ...), ``retry_after`` the seconds the server asked to wait
    (``None`` when it did not say), ``body`` the parsed error envelope (empty when there was none).
    """

    status: Optional[int]
    code: str
    message: str
    retry_after: Optional[float]
    body: Dict[str, Any]

    def __init__(
        self,
        status: Optional[int],
        code: str,
        message: str,
        retry_after: Optional[float] = None,
        body: Optional[Mapping[str, Any]] = None,
    ) -> None:
        super().__init__(status, code, message, retry_after)
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after
        self.body = dict(body) if body is not None else {}

    def __str__(self) -> str:
        head = f"{self.status} {self.code}" if self.status is not None else self.code
        tail = f" (retry after {self.retry_after:g} s)" if self.retry_after is not None else ""
        return f"{head}: {self.message}{tail}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, "
            f"message={self.message!r}, retry_after={self.retry_after!r})"
        )

    def __reduce__(self) -> Any:
        return (type(self), (self.status, self.code, self.message, self.retry_after, self.body))


class BadRequestError(S3EdgeError):
    """400: a malformed request or a bad field value (``invalid_request`` and the like)."""


class AuthError(S3EdgeError):
    """401: no API key, or an unknown, malformed or deleted one. 403 is :class:`ForbiddenError`, a subclass."""


class ForbiddenError(AuthError):
    """403: a valid key without the route's scope, or a refusal such as ``space_suspended``."""


class InsufficientCreditsError(S3EdgeError):
    """402: an upload the balance cannot pay for."""

    @property
    def required_credits(self) -> Optional[float]:
        value = self.body.get("requiredCredits")
        return float(value) if isinstance(value, (int, float)) else None

    @property
    def balance(self) -> Optional[float]:
        value = self.body.get("balance")
        return float(value) if isinstance(value, (int, float)) else None


class NotFoundError(S3EdgeError):
    """404: no such resource among the caller's (another user's looks the same)."""


class ConflictError(S3EdgeError):
    """409: ``bucket_exists``, ``project_exists``, ``hostname_taken``, ``verification_failed``."""


class PayloadTooLargeError(S3EdgeError):
    """413: an upload above the server's ``maxObjectSize``."""


class UnsupportedMediaTypeError(S3EdgeError):
    """415: not a multipart upload, or an asset with no preview."""


class RateLimitedError(S3EdgeError):
    """429: too many requests to this endpoint for one API key; ``retry_after`` says how long to wait."""


class ServerError(S3EdgeError):
    """5xx: the server failed (``internal_error``, ``storage_full``, ...)."""


class ServiceUnavailableError(ServerError):
    """503: retry later (``slow_down``, ``storage_unavailable``, ``busy``); nothing was done."""


class TransportError(S3EdgeError):
    """No usable answer: the connection failed or timed out, or a download was cut short. ``status`` is ``None``
    unless the answer's status line had come."""


_BY_STATUS: Dict[int, Type[S3EdgeError]] = {
    400: BadRequestError,
    401: AuthError,
    402: InsufficientCreditsError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    415: UnsupportedMediaTypeError,
    429: RateLimitedError,
    503: ServiceUnavailableError,
}


def error_for_status(status: int) -> Type[S3EdgeError]:
    """The exception class of an HTTP error status."""
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return ServerError
    return S3EdgeError
