"""The HTTP layer: one connection per request (http.client), bodies that can be sent again, the retry
policy for 429 and 503, and the error envelope turned into exceptions. Nothing here writes the API
key anywhere but the Authorization header."""

from __future__ import annotations

import email.utils
import http.client
import json
import os
import random
import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Dict, FrozenSet, Iterator, Mapping, Optional, Sequence, Tuple, Union
from urllib.parse import quote, urlencode, urlsplit

from .errors import S3EdgeError, TransportError, error_for_status

__all__ = ["RetryPolicy", "Body", "Transport", "Response", "parse_retry_after"]

CHUNK_SIZE = 64 * 1024
# An error answer is small JSON; more than this is not read into memory.
MAX_ERROR_BODY = 1024 * 1024

# The codes the server gives these statuses (src/api/plugin.ts), for an answer that has no envelope
# (a proxy in front of the gateway, say).
_DEFAULT_CODES: Dict[int, str] = {
    400: "invalid_request",
    401: "unauthorized",
    402: "insufficient_credits",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
    500: "internal_error",
    503: "service_unavailable",
}


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Seconds to wait from a Retry-After value: delay-seconds or an HTTP-date (RFC 9110 §10.2.3)."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(int(text))
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    delta = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, delta)


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long to wait before sending a request again.

    Only ``statuses`` (429 and 503) are retried: the server answers them before doing anything, so a
    retried upload or delete is never done twice. A ``Retry-After`` is honoured as given, unless it
    asks for more than ``max_retry_after`` seconds: then the error is raised at once. Without one, the
    wait is ``backoff_base * 2**n`` (n = 0, 1, ...) capped at ``backoff_max``, times a random factor
    from 0.5 to 1 so that many clients do not come back together. ``max_retries`` bounds the retries
    (0: never retry).
    """

    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 8.0
    max_retry_after: float = 60.0
    statuses: FrozenSet[int] = field(default_factory=lambda: frozenset({429, 503}))

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        if self.backoff_base < 0 or self.backoff_max < 0 or self.max_retry_after < 0:
            raise ValueError("backoff_base, backoff_max and max_retry_after must be 0 or more")

    def delay(self, retry: int, retry_after: Optional[float], rand: Callable[[], float] = random.random) -> Optional[float]:
        """Seconds to wait before retry number ``retry`` (0-based), or None when not to retry."""
        if retry >= self.max_retries:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after else None
        backoff = min(self.backoff_max, self.backoff_base * (2**retry))
        return backoff * (0.5 + rand() / 2)


Source = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]", IO[bytes]]


class Body:
    """A request body as chunks: ``length`` when known (else it is sent chunked), and whether it can be sent
    again (``replayable``; a pipe cannot)."""

    def __init__(self, parts: Sequence[Union[bytes, "_FilePart"]]) -> None:
        self._parts = list(parts)
        lengths = [len(p) if isinstance(p, bytes) else p.length for p in self._parts]
        self.length: Optional[int] = None if any(n is None for n in lengths) else sum(n for n in lengths if n is not None)
        self.replayable = all(isinstance(p, bytes) or p.replayable for p in self._parts)
        self._sent = False

    @classmethod
    def of_bytes(cls, data: bytes) -> "Body":
        return cls([data])

    def chunks(self) -> Iterator[bytes]:
        if self._sent and not self.replayable:
            raise RuntimeError("this body cannot be sent twice")
        self._sent = True
        for part in self._parts:
            if isinstance(part, bytes):
                if part:
                    yield part
            else:
                yield from part.chunks()


class _FilePart:
    """The bytes of an upload: in memory, a file by path (opened for each attempt) or a binary file object
    (rewound for each attempt when it can seek)."""

    def __init__(self, source: Source) -> None:
        self._data: Optional[bytes] = None
        self._path: Optional[str] = None
        self._file: Optional[IO[bytes]] = None
        self._start = 0
        self.length: Optional[int]
        if isinstance(source, (bytes, bytearray, memoryview)):
            self._data = bytes(source)
            self.length = len(self._data)
            self.replayable = True
        elif isinstance(source, (str, os.PathLike)):
            self._path = os.fspath(source)
            self.length = os.stat(self._path).st_size
            self.replayable = True
        elif hasattr(source, "read"):
            self._file = source
            seekable = False
            try:
                seekable = bool(source.seekable())
            except (AttributeError, OSError, ValueError):
                seekable = False
            if seekable:
                self._start = source.tell()
                self.length = source.seek(0, os.SEEK_END) - self._start
                source.seek(self._start)
            else:
                self.length = None
            self.replayable = seekable
        else:
            raise TypeError("the file must be bytes, a path or a binary file object")

    def chunks(self) -> Iterator[bytes]:
        if self._data is not None:
            yield self._data
            return
        if self._path is not None:
            with open(self._path, "rb") as f:
                yield from self._exactly(f)
            return
        assert self._file is not None
        if self.replayable:
            self._file.seek(self._start)
            yield from self._exactly(self._file)
        else:
            while True:
                chunk = self._file.read(CHUNK_SIZE)
                if not chunk:
                    return
                if not isinstance(chunk, bytes):
                    raise TypeError("the file object must be opened in binary mode")
                yield chunk

    def _exactly(self, f: IO[bytes]) -> Iterator[bytes]:
        # The Content-Length was sent: a file that changes meanwhile must not send more or fewer bytes.
        left = self.length or 0
        while left > 0:
            chunk = f.read(min(CHUNK_SIZE, left))
            if not isinstance(chunk, bytes):
                raise TypeError("the file object must be opened in binary mode")
            if not chunk:
                raise TransportError(None, "file_changed", "the file became shorter while it was being uploaded")
            left -= len(chunk)
            yield chunk


def _quote_param(value: str) -> str:
    # As browsers and undici's FormData write multipart names (WHATWG): the value stays UTF-8.
    return value.replace("\r", "%0D").replace("\n", "%0A").replace('"', "%22")


def multipart_body(fields: Sequence[Tuple[str, str]], file_field: str, file_name: str, content_type: str, source: Source, boundary: str) -> Tuple[Body, str]:
    """multipart/form-data (RFC 7578): the text fields, then the file part. Returns the body and its Content-Type."""
    head = bytearray()
    for name, value in fields:
        head += f'--{boundary}\r\nContent-Disposition: form-data; name="{_quote_param(name)}"\r\n\r\n'.encode()
        head += value.encode() + b"\r\n"
    head += (
        f'--{boundary}\r\nContent-Disposition: form-data; name="{_quote_param(file_field)}"; filename="{_quote_param(file_name)}"\r\n'
        f"Content-Type: {content_type}\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    return Body([bytes(head), _FilePart(source), tail]), f"multipart/form-data; boundary={boundary}"


class Response:
    """An answer whose body has not been read yet; close() it (or read_all()) when done."""

    def __init__(self, conn: http.client.HTTPConnection, raw: http.client.HTTPResponse, method: str, path: str) -> None:
        self._conn = conn
        self.raw = raw
        self.status = raw.status
        self.headers = raw.headers
        self.method = method
        self.path = path

    def read_all(self, limit: Optional[int] = None) -> bytes:
        try:
            return self.raw.read() if limit is None else self.raw.read(limit)
        except socket.timeout:
            raise TransportError(self.status, "timeout", f"{self.method} {self.path}: timed out reading the answer") from None
        except (OSError, http.client.HTTPException) as err:
            raise TransportError(self.status, "connection_failed", f"{self.method} {self.path}: {_describe(err)}") from None
        finally:
            self.close()

    def close(self) -> None:
        self.raw.close()
        self._conn.close()


def _describe(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


def error_from(status: int, headers: Mapping[str, str], data: bytes) -> S3EdgeError:
    """The exception of an error answer: its envelope's code and message, its Retry-After."""
    body: Dict[str, Any] = {}
    try:
        parsed = json.loads(data.decode("utf-8"))
        if isinstance(parsed, dict):
            body = parsed
    except (UnicodeDecodeError, ValueError):
        pass
    code = body.get("code") if isinstance(body.get("code"), str) else _DEFAULT_CODES.get(status, f"http_{status}")
    message = body.get("message") if isinstance(body.get("message"), str) else http.client.responses.get(status, "HTTP error")
    retry_after = parse_retry_after(headers.get("retry-after"))
    return error_for_status(status)(status, str(code), str(message), retry_after, body)


class Transport:
    """Sends requests to one base URL with the API key, and retries under a RetryPolicy."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float,
        retry: RetryPolicy,
        user_agent: str,
        ssl_context: Optional[ssl.SSLContext] = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("base_url must be an http:// or https:// URL, like http://127.0.0.1:9000")
        if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
            raise ValueError("base_url takes no user name, password, query or fragment")
        # A key that could not go in a header would make http.client name it in its ValueError.
        if not api_key or any(c <= " " or c > "~" for c in api_key):
            raise ValueError("api_key must be a non-empty token of printable ASCII without spaces")
        self.base_url = base_url.rstrip("/")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self.__api_key = api_key
        self.timeout = timeout
        self.retry = retry
        self._user_agent = user_agent
        self._ssl_context = ssl_context
        self._sleep = sleep

    def _connection(self) -> http.client.HTTPConnection:
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=self.timeout, context=self._ssl_context or ssl.create_default_context())
        return http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)

    def target(self, path: str, query: Optional[Mapping[str, Any]] = None) -> str:
        pairs = [(k, _query_value(v)) for k, v in (query or {}).items() if v is not None]
        return f"{self._prefix}{path}" + (f"?{urlencode(pairs)}" if pairs else "")

    def send(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        body: Optional[Body] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> Response:
        """Sends the request, retrying 429 and 503 as the policy says; returns any other answer unread."""
        retry = 0
        while True:
            res = self._send_once(method, path, self.target(path, query), body, headers or {})
            if res.status not in self.retry.statuses:
                return res
            err = error_from(res.status, res.headers, res.read_all(MAX_ERROR_BODY))
            wait = self.retry.delay(retry, err.retry_after) if body is None or body.replayable else None
            if wait is None:
                raise err
            self._sleep(wait)
            retry += 1

    def _send_once(self, method: str, path: str, target: str, body: Optional[Body], extra: Mapping[str, str]) -> Response:
        headers = {
            "Authorization": f"Bearer {self.__api_key}",
            "User-Agent": self._user_agent,
            "Accept": "application/json",
            **extra,
        }
        if body is not None:
            if body.length is not None:
                headers["Content-Length"] = str(body.length)
            else:
                headers["Transfer-Encoding"] = "chunked"
        conn = self._connection()
        sent: Optional[BaseException] = None
        try:
            conn.request(method, target, body=body.chunks() if body is not None else None, headers=headers, encode_chunked=body is not None and body.length is None)
        except S3EdgeError:
            conn.close()
            raise
        except socket.timeout:
            conn.close()
            raise TransportError(None, "timeout", f"{method} {path}: timed out sending the request") from None
        except (OSError, http.client.HTTPException) as err:
            if conn.sock is None:  # never connected
                conn.close()
                raise TransportError(None, "connection_failed", f"{method} {path}: {_describe(err)}") from None
            # The server may have answered (and stopped reading) before the body was all sent: read that answer.
            sent = err
        try:
            raw = conn.getresponse()
        except socket.timeout:
            conn.close()
            raise TransportError(None, "timeout", f"{method} {path}: no answer within {self.timeout:g} s") from None
        except (OSError, http.client.HTTPException) as err:
            conn.close()
            raise TransportError(None, "connection_failed", f"{method} {path}: {_describe(sent or err)}") from None
        return Response(conn, raw, method, path)

    def json(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        json_body: Any = None,
        body: Optional[Body] = None,
        content_type: Optional[str] = None,
    ) -> Dict[str, Any]:
        """A request whose answer is a JSON envelope: the envelope when ``success`` is true, else the error."""
        headers: Dict[str, str] = {}
        if json_body is not None:
            body = Body.of_bytes(json.dumps(json_body).encode("utf-8"))
            content_type = "application/json"
        if content_type is not None:
            headers["Content-Type"] = content_type
        res = self.send(method, path, query=query, body=body, headers=headers)
        if res.status >= 400:
            raise error_from(res.status, res.headers, res.read_all(MAX_ERROR_BODY))
        data = res.read_all()
        try:
            parsed = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise S3EdgeError(res.status, "bad_response", f"{method} {path}: the answer is not JSON") from None
        if not isinstance(parsed, dict) or parsed.get("success") is not True:
            raise S3EdgeError(res.status, "bad_response", f"{method} {path}: the answer is not a success envelope", body=parsed if isinstance(parsed, dict) else None)
        return parsed


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def path_segment(value: str) -> str:
    """One path segment, percent-encoded (an id never changes the path it goes in)."""
    if not isinstance(value, str) or value == "":
        raise ValueError("an id must be a non-empty string")
    return quote(value, safe="")
