"""The Redis key layout shared by hmem's Redis stores (documented in docs/redis.md).

Every key of one user starts ``<prefix>:{<user>}:`` where ``<user>`` is the user
id percent-encoded for ``%``, ``{``, ``}`` and ``:``. The braces make the user id
the Cluster hash tag, so all keys of a user hash to one slot and a Lua script
may touch them together; the encoding guarantees an id containing ``}`` cannot
end the tag early (or ``:`` make two ids' keys collide).

Example::

    >>> ks = KeySpace("hmem")
    >>> ks.session_messages("alice", "chat-1")
    'hmem:{alice}:s:chat-1:msgs'
    >>> ks.user("we}ird:id")
    'hmem:{we%7Dird%3Aid}'
    >>> ks.user_of_session_index(ks.session_index("we}ird:id"))
    'we}ird:id'
"""

from __future__ import annotations

import re

from hmem.errors import ConfigError

__all__ = ["KeySpace", "decode_part", "encode_part"]

_ESCAPES = {"%": "%25", "{": "%7B", "}": "%7D", ":": "%3A"}
_UNESCAPES = {code: ch for ch, code in _ESCAPES.items()}
_ENCODED = re.compile("|".join(_UNESCAPES))
_GLOB = re.compile(r"([*?\[\]\\])")  # SCAN MATCH metacharacters


def encode_part(value: str) -> str:
    """Percent-encode the characters that carry meaning in a key (``% { } :``)."""
    if not any(ch in value for ch in _ESCAPES):
        return value
    return "".join(_ESCAPES.get(ch, ch) for ch in value)


def decode_part(value: str) -> str:
    """The inverse of :func:`encode_part`."""
    return _ENCODED.sub(lambda m: _UNESCAPES[m.group(0)], value)


class KeySpace:
    """Builds every key name from a prefix (default ``"hmem"``)."""

    def __init__(self, prefix: str) -> None:
        if not isinstance(prefix, str) or not prefix or any(ch in prefix for ch in "{}") or prefix != prefix.strip():
            raise ConfigError(
                f"Redis key prefix must be a non-empty string without braces or surrounding spaces, got {prefix!r}"
            )
        self.prefix = prefix

    def user(self, user_id: str) -> str:
        """``<prefix>:{<user>}``: the start of every key of this user."""
        return f"{self.prefix}:{{{encode_part(user_id)}}}"

    # sessions
    def session_messages(self, user_id: str, session_id: str) -> str:
        """LIST of the session's messages as JSON, oldest first."""
        return f"{self.user(user_id)}:s:{encode_part(session_id)}:msgs"

    def session_meta(self, user_id: str, session_id: str) -> str:
        """HASH ``v`` (version), ``t`` (updated, epoch s), ``tok`` (last write), ``m:<id>`` per message."""
        return f"{self.user(user_id)}:s:{encode_part(session_id)}:meta"

    def session_index(self, user_id: str) -> str:
        """ZSET session_id scored by last update (epoch seconds)."""
        return f"{self.user(user_id)}:sessions"

    def session_index_pattern(self) -> str:
        """SCAN ``MATCH`` pattern of every user's :meth:`session_index` (glob characters of
        the prefix escaped)."""
        prefix = _GLOB.sub(r"\\\1", self.prefix)
        return f"{prefix}:{{*}}:sessions"

    def user_of_session_index(self, key: str) -> str | None:
        """The user id of a :meth:`session_index` key, else None (a key the pattern matched
        that is not one: the ``*`` also spans ``}:``)."""
        head, tail = f"{self.prefix}:{{", "}:sessions"
        if not (key.startswith(head) and key.endswith(tail)):
            return None
        encoded = key[len(head): -len(tail)]
        return None if not encoded or any(ch in encoded for ch in "{}:") else decode_part(encoded)

    # summaries
    def summary(self, user_id: str, session_id: str) -> str:
        """STRING: the session's summary as JSON."""
        return f"{self.user(user_id)}:sum:{encode_part(session_id)}"

    # profile
    def profile_current(self, user_id: str) -> str:
        """HASH key -> JSON of the current entry."""
        return f"{self.user(user_id)}:p:cur"

    def profile_history(self, user_id: str, key: str) -> str:
        """LIST of JSON entries of one profile key, oldest first."""
        return f"{self.user(user_id)}:p:h:{encode_part(key)}"

    def profile_keys(self, user_id: str) -> str:
        """SET of every profile key that has history (for delete_user)."""
        return f"{self.user(user_id)}:p:keys"

    # long-term items (hmem.backends.redis.items)
    def items(self, user_id: str) -> str:
        """HASH item id -> item JSON."""
        return f"{self.user(user_id)}:it"

    def item_index(self, user_id: str) -> str:
        """HASH item id -> ``<dedup member>\\n<source member>`` (what to unindex on delete)."""
        return f"{self.user(user_id)}:it:ix"

    def item_dedup(self, user_id: str) -> str:
        """ZSET (all scores 0) of ``<kind>\\x1f<dedup key>\\x1f<id>``, searched by lex range."""
        return f"{self.user(user_id)}:it:dk"

    def item_sources(self, user_id: str) -> str:
        """ZSET (all scores 0) of ``<source message id>\\x1f<id>``, searched by lex range."""
        return f"{self.user(user_id)}:it:src"

    def item_generation(self, user_id: str) -> str:
        """HASH ``g`` change counter, ``b`` oldest generation the change log covers."""
        return f"{self.user(user_id)}:it:gen"

    def item_changes(self, user_id: str) -> str:
        """ZSET ``<gen>:<id>`` scored by the generation that changed the item (bounded log)."""
        return f"{self.user(user_id)}:it:log"
