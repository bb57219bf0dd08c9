"""Showing a URL without its secrets: the one :func:`mask_url` behind every log line,
error message and ``repr`` that names a store or endpoint.

Hidden: the password of the userinfo (a lone userinfo too: redis-py reads
``redis://secret@host`` as a password) and the value of every query or fragment
parameter whose name looks secret (``password``, ``pwd``, ``token``, ``api_key``,
``key``, ``secret``, ``auth``, ``signature`` …). Nothing here raises: a string that
does not parse as a URL is masked, never echoed.

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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

__all__ = ["has_unencoded_userinfo", "is_secret_name", "mask_url"]

MASK = "****"

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
# A host[:port] as it appears before the first '/', '?' or '#': name, IPv4 or [IPv6].
_HOST = re.compile(r"^(?:\[[0-9A-Za-z:.%]+\]|[A-Za-z0-9._~%\-]+)(?::\d*)?$")
# key=value after '?', '&', ';' or '#': query parameters, matrix parameters, OAuth fragments.
_PARAM = re.compile(r"(?<=[?&;#])([^=&;#?]*)=([^&;#]*)")
_SECRET_WORDS = ("pass", "pwd", "secret", "token", "key", "auth", "sig", "credential")
_DELIMITERS = "/?#"


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
