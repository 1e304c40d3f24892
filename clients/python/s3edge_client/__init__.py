"""A Python client of the s3edge management API (/api/v3 and /storage), standard library only.

    from s3edge_client import S3EdgeClient, NotFoundError

    client = S3EdgeClient("http://127.0.0.1:9000", api_key)
    asset = client.upload_asset("logo.png", visibility="public")
    data = client.download_asset(asset["id"])
    client.delete_asset(asset["id"])

Results are the unwrapped ``data`` of the server's envelopes (typed dicts, s3edge_client.types);
failures raise S3EdgeError subclasses carrying ``status``, ``code``, ``message`` and ``retry_after``.
"""

from . import errors
from ._http import RetryPolicy, parse_retry_after
from .client import Destination, S3EdgeClient, __version__
from .errors import *  # noqa: F401,F403 (the exception classes: errors.__all__)

__all__ = ["S3EdgeClient", "RetryPolicy", "Destination", "parse_retry_after", "__version__"]
__all__ += errors.__all__
