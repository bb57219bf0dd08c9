"""Showing a URL without its secrets: the one :func:`mask_url` behind every log line,
error message and ``repr`` that names a store or endpoint.

Hidden: the password of the userinfo (a lone userinfo too: redis-py reads
``redis://secret@host`` as a password) and the value of every query or fragment
parameter whose name looks secret (``password``, ``pwd``, ``token``, ``api_key``,
``key``, ``secret``, ``auth``, ``signature``, ``jwt`` …). Nothing here raises: a string
that does not parse as a URL is masked, never echoed.

Text that may hold a URL or a secret — an exception's message, an upstream's error
body, a log record of the HTTP client — goes through :func:`redact`: every URL in it
through :func:`mask_url`, every secret-named parameter masked, and every configured
secret value (:func:`url_secrets` finds those inside URLs) replaced by ``****``.
:func:`redact_json` does the same to each string of a JSON value, and
:func:`mask_urls_in_logs` to the records of the HTTP clients' loggers, which name
every URL they request.

A password with an unencoded ``#``, ``?`` or ``/`` makes the authority run
past where a URL parser stops (``redis://:p#ss@host`` parses as host ``""`` and
fragment ``ss@host``). Such a URL is recognised here — its userinfo is taken up to
the last ``@`` — so it is still masked, and :func:`has_unencoded_userinfo` lets the
caller refuse it with advice instead of connecting somewhere unexpected.

Example::

    >>> mask_url("redis://:s3cret@cache.internal:6379/0")
    'redis://:****@cache.internal:6379/0'
    >>> mask_url("https://api.example.com/v1?api_key=abc123&model=x")
    'https://api.example.com/v1?api_key=****&model=x'
    >>> mask_url("redis://:p#ss?w/rd@host:6379/0")
    'redis://:****@host:6379/0'
    >>> redact("POST http://u:pw@h/v1?token=t0k3n failed: bad key sk-live-123", ["sk-live-123"])
    'POST http://u:****@h/v1?token=**** failed: bad key ****'
"""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

__all__ = [
    "MIN_SECRET_CHARS",
    "has_unencoded_userinfo",
    "is_secret_name",
    "mask_text",
    "mask_url",
    "mask_urls_in_logs",
    "redact",
    "redact_json",
    "url_secrets",
]

MASK = "****"
#: Shorter configured values are not replaced in text: a one- or two-letter "secret"
#: protects nothing, and replacing it would blank every such letter of a message.
MIN_SECRET_CHARS = 4

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
# A host[:port] as it appears before the first '/', '?' or '#': name, IPv4 or [IPv6].
_HOST = re.compile(r"^(?:\[[0-9A-Za-z:.%]+\]|[A-Za-z0-9._~%\-]+)(?::\d*)?$")
# key=value after '?', '&', ';' or '#': query parameters, matrix parameters, OAuth fragments.
_PARAM = re.compile(r"(?<=[?&;#])([^=&;#?]*)=([^&;#]*)")
_SECRET_WORDS = ("pass", "pwd", "secret", "token", "key", "auth", "sig", "credential", "jwt", "bearer", "cookie")
_DELIMITERS = "/?#"
# A URL inside free text: up to white space, a quote or an angle bracket.
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`]+")
# key=value after '?', '&', ';' or '#' in free text (a path without its scheme, a log line):
# the value ends where a URL's would, or at white space or a quote.
_PARAM_IN_TEXT = re.compile(r"(?<=[?&;#])([^=&;#?\s'\"<>]*)=([^&;#\s'\"<>]*)")


def is_secret_name(name: str) -> bool:
    """True when a parameter or field ``name`` looks like it holds a secret.

    >>> [is_secret_name(n) for n in ("password", "X-Api-Key", "access_token", "db")]
    [True, True, True, False]
    """
    lowered = unquote(name).lower()
    return any(word in lowered for word in _SECRET_WORDS)


@dataclass(frozen=True)
class _Split:
    head: str  # "scheme://" or "" when there is no scheme
    userinfo: str | None
    tail: str  # host, path, query and fragment
    spilled: bool  # the userinfo runs past a '/', '?' or '#': unencoded in the password


def _query_explains_at(after: str) -> bool:
    """Every '@' after the host sits in a ``key=value`` of the query (``?email=a@b``)."""
    start = after.find("?")
    if start < 0 or "@" in after[:start]:
        return False
    end = after.find("#", start)
    if end >= 0 and "@" in after[end:]:
        return False
    for part in re.split("[&;]", after[start + 1 : end if end >= 0 else None]):
        name, eq, _ = part.partition("=")
        if "@" in part and (not eq or "@" in name):
            return False
    return True


def _split(url: str) -> _Split:
    scheme = _SCHEME.match(url)
    head, rest = (scheme.group(0), url[scheme.end() :]) if scheme else ("", url)
    end = next((i for i, char in enumerate(rest) if char in _DELIMITERS), len(rest))
    netloc = rest[:end]
    if "@" in netloc:
        at = netloc.rfind("@")
        return _Split(head, rest[:at], rest[at + 1 :], spilled=False)
    at = rest.rfind("@")
    if at < 0 or (_HOST.match(netloc) and _query_explains_at(rest[end:])):
        return _Split(head, None, rest, spilled=False)
    return _Split(head, rest[:at], rest[at + 1 :], spilled=True)


def _mask_param(match: re.Match[str]) -> str:
    name = match.group(1)
    return f"{name}={MASK}" if is_secret_name(name) else match.group(0)


def mask_url(url: object) -> str:
    """``url`` safe for logs and errors: password and secret parameters become ``****``.

    >>> mask_url("redis://user:pw@host:6379/2?password=x&db=1")
    'redis://user:****@host:6379/2?password=****&db=1'
    >>> mask_url("redis://s3cret@host:6379")
    'redis://****@host:6379'
    >>> mask_url("redis://127.0.0.1:6379/0")
    'redis://127.0.0.1:6379/0'
    """
    text = url if isinstance(url, str) else str(url)
    parts = _split(text)
    tail = _PARAM.sub(_mask_param, parts.tail)
    if parts.userinfo is None:
        return parts.head + tail
    user, colon, _ = parts.userinfo.partition(":")
    shown_user = colon and parts.head and not any(c in user for c in _DELIMITERS)
    return f"{parts.head}{user}:{MASK}@{tail}" if shown_user else f"{parts.head}{MASK}@{tail}"


def has_unencoded_userinfo(url: str) -> bool:
    """True when the user name or password of ``url`` holds an unencoded ``/``, ``?``
    or ``#``, so a URL parser would read the wrong host (percent-encode it:
    ``urllib.parse.quote(password, safe="")``).

    >>> has_unencoded_userinfo("redis://:p#ss@host:6379"), has_unencoded_userinfo("redis://:p%23ss@host:6379")
    (True, False)
    """
    return _split(url).spilled


def url_secrets(url: str) -> tuple[str, ...]:
    """The secrets written in ``url``: its password (or lone userinfo) and the values of
    its secret-named parameters, each as written and percent-decoded; and the HTTP Basic
    credentials an HTTP client sends for its userinfo (an endpoint may echo those).

    >>> url_secrets("https://u:p%40ss@h/v1?api_key=k3y&model=m")
    ('p%40ss', 'p@ss', 'k3y', 'dTpwQHNz')
    >>> url_secrets("sqlite")
    ()
    """
    if not isinstance(url, str):
        return ()
    parts = _split(url)
    found: list[str] = []
    if parts.userinfo is not None:
        user, colon, password = parts.userinfo.partition(":")
        # As mask_url shows it: the user name stays only where it is plainly one.
        plain_user = colon and parts.head and not any(c in user for c in _DELIMITERS)
        found.append(password if plain_user else parts.userinfo)
    found.extend(match.group(2) for match in _PARAM.finditer(parts.tail) if is_secret_name(match.group(1)))
    forms = [form for value in found for form in (value, unquote(value))]
    if parts.userinfo is not None:
        basic = f"{unquote(user)}:{unquote(password)}" if colon else unquote(parts.userinfo)
        forms.append(base64.b64encode(basic.encode("utf-8", "surrogatepass")).decode("ascii"))
    return tuple(dict.fromkeys(form for form in forms if form))


def mask_text(text: str) -> str:
    """``text`` with every URL in it masked (:func:`mask_url`) and the value of every
    secret-named ``?name=value`` outside one (a path, a log line) hidden.

    >>> mask_text("GET /v1/embeddings?api_key=s3cret&model=m from redis://:pw@cache:6379 failed")
    'GET /v1/embeddings?api_key=****&model=m from redis://:****@cache:6379 failed'
    """
    masked = _URL_IN_TEXT.sub(lambda match: mask_url(match.group(0)), text)
    return _PARAM_IN_TEXT.sub(_mask_param, masked)


def redact(text: object, secrets: Iterable[str] = ()) -> str:
    """``text`` safe to log, print or send to a client: :func:`mask_text`, then every
    value of ``secrets`` (of at least :data:`MIN_SECRET_CHARS` characters, also
    percent-encoded) replaced by ``****``.

    >>> redact("the server said: invalid key sk-12345 for https://h/v1?key=sk-12345", ["sk-12345"])
    'the server said: invalid key **** for https://h/v1?key=****'
    """
    shown = mask_text(text if isinstance(text, str) else str(text))
    for secret in _longest_first(secrets):
        shown = shown.replace(secret, MASK)
    return shown


def redact_json(value: Any, secrets: Iterable[str] = ()) -> Any:
    """A copy of the JSON ``value`` with :func:`redact` applied to every string in it,
    object keys included.

    >>> redact_json({"error": {"message": "bad key sk-12345", "code": 401}}, ["sk-12345"])
    {'error': {'message': 'bad key ****', 'code': 401}}
    """
    ordered = _longest_first(secrets)

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            return redact(node, ordered)
        if isinstance(node, dict):
            return {walk(key): walk(item) for key, item in node.items()}
        if isinstance(node, list | tuple):
            return [walk(item) for item in node]
        return node

    return walk(value)


def _longest_first(secrets: Iterable[str]) -> list[str]:
    """The secrets worth replacing, with their percent-encoded forms, longest first (so
    a secret that contains another is replaced whole)."""
    forms = {form for secret in secrets if isinstance(secret, str) and len(secret) >= MIN_SECRET_CHARS
             for form in (secret, quote(secret, safe=""))}
    return sorted(forms, key=len, reverse=True)


class _MaskUrls(logging.Filter):
    """Rewrites a record's message through :func:`mask_text` (the HTTP clients log
    every request's full URL at INFO)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is logging's to report, not ours
            return True
        masked = mask_text(message)
        if masked != message:
            record.msg, record.args = masked, None
        return True


_URL_MASK = _MaskUrls()


def mask_urls_in_logs(*logger_names: str) -> None:
    """Mask the URLs in every record of the loggers ``logger_names`` (idempotent). Called
    where hmem builds an HTTP client for an endpoint whose URL may hold a secret."""
    for name in logger_names:
        logger = logging.getLogger(name)
        if _URL_MASK not in logger.filters:
            logger.addFilter(_URL_MASK)
