"""What the OpenAI-compatible providers (embeddings, LLM) share about their endpoint.

* A base URL may carry a query (``…/v1?api_key=…``, ``?api-version=…``). The openai
  client would append its paths after it (``/v1/?api_key=…embeddings``); here the query
  is taken off the base URL and sent with every request instead.
* Their errors and logs never show a secret: the key, the password or a secret query
  parameter of the URL (:func:`endpoint_secrets`, for :func:`hmem._secrets.redact`), nor
  the full URL the HTTP clients log for each request (:data:`CLIENT_LOGGERS`).

Example::

    >>> client_options("http://127.0.0.1:8000/v1?api_key=s3cret&api-version=2")
    {'base_url': 'http://127.0.0.1:8000/v1', 'default_query': {'api_key': 's3cret', 'api-version': '2'}}
    >>> endpoint_secrets("http://127.0.0.1:8000/v1?api_key=s3cret", "sk-1")
    ('sk-1', 's3cret')
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from hmem._secrets import mask_urls_in_logs, url_secrets

__all__ = ["CLIENT_LOGGERS", "client_options", "endpoint_secrets", "mask_client_logs"]

#: The loggers that name each request's full URL: httpx (the openai package's httpx2,
#: the proxy's httpx) at INFO, the openai client at DEBUG.
CLIENT_LOGGERS = ("httpx", "httpx2", "openai._base_client")


def client_options(base_url: str | None) -> dict[str, Any]:
    """``base_url`` (and ``default_query``, from the URL's query) for ``openai.OpenAI``."""
    if not base_url:
        return {"base_url": None}
    parts = urlsplit(base_url)
    if not parts.query:
        return {"base_url": base_url}
    return {"base_url": urlunsplit(parts._replace(query="")),
            "default_query": dict(parse_qsl(parts.query, keep_blank_values=True))}


def endpoint_secrets(base_url: str | None, api_key: str | None) -> tuple[str, ...]:
    """The values an error or log line about this endpoint must not show."""
    return tuple(dict.fromkeys(value for value in (api_key, *url_secrets(base_url or "")) if value))


def mask_client_logs() -> None:
    """Mask the URLs in the HTTP clients' log records (idempotent)."""
    mask_urls_in_logs(*CLIENT_LOGGERS)
