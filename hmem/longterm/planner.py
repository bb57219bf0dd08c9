"""Query planning with an LLM (optional): more search queries for one question.

A question about several things ("Where did Maya's sister marry, and what did the groom
do?") or about a kind of thing ("What activities does Mel do with her family?") is
answered by turns that share few words with it: "I'm off to go swimming with the kids".
Offline, recall has only the question's own words and its embedding. With an LLM
configured and ``HMEM_QUERY_PLANNER=llm``, the model first rewrites the question into up to
``max_queries`` short search queries — one per part of the question, or likely specific
items for a list question — and recall searches each, keeping every item's best score
(:func:`fuse_planned`). The offline path stays the default; when the LLM fails, recall
goes on without the extra queries and the log says why.

>>> parse_queries('{"queries": ["swimming with kids", "family camping trip"]}', "What activities?", 3)
('swimming with kids', 'family camping trip')
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol, runtime_checkable

from hmem.errors import ConfigError, HmemError
from hmem.protocols import LLM
from hmem.types import Hit, Message

__all__ = [
    "MAX_PLANNED_QUERIES",
    "MAX_QUERY_CHARS",
    "PLANNED_WEIGHT",
    "LLMQueryPlanner",
    "QueryPlanner",
    "fuse_planned",
    "parse_queries",
]

log = logging.getLogger(__name__)

#: The most extra queries one question may get (each is one more recall).
MAX_PLANNED_QUERIES = 5
#: A planned query longer than this is dropped: a search query, not a paragraph.
MAX_QUERY_CHARS = 300
#: An item found by a planned query scores this times its score there, so the question's
#: own ranking leads where both found something. Not measured: no LLM runs on the
#: machines hmem's benchmarks run on (docs/longterm.md, "Query planning").
PLANNED_WEIGHT = 0.8

_PROMPT = (
    "You turn a question to a personal memory archive into search queries. The archive holds "
    "what the user and others said in past chats. Write at most {n} short search queries that "
    "together find every fact needed to answer the question: one per part of a question that "
    "asks several things; for a question about a kind of thing (activities, books, places, "
    "pets), the likely specific items in the words people would use. Keep the names the "
    "question uses; write in the question's language. Do not repeat the question. Answer only "
    'with JSON: {{"queries": ["...", "..."]}}'
)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)]|\"|')\s*")


@runtime_checkable
class QueryPlanner(Protocol):
    """Extra search queries for a recall query (never the query itself); ``()`` when it
    has none. A planner never raises on its own failure: recall must still answer."""

    def plan(self, query: str) -> tuple[str, ...]: ...


def parse_queries(text: str, query: str, limit: int) -> tuple[str, ...]:
    """The search queries in an LLM's answer ``text``: a JSON object with ``queries``, a
    JSON list, or one per line (bullets and numbers stripped). Drops empty ones, ones
    longer than :data:`MAX_QUERY_CHARS`, repeats and the ``query`` itself (case and space
    ignored); keeps the first ``limit``. Pure; a reply with none gives ``()``.

    >>> parse_queries("1. pottery class\\n2. Pottery  class\\n- camping", "x", 5)
    ('pottery class', 'camping')
    >>> parse_queries('["What activities?"]', "what activities?", 3)
    ()
    """
    if limit < 1:
        return ()
    candidates: list[object]
    try:
        data = json.loads(text)
    except ValueError:
        candidates = [_BULLET.sub("", line).strip().rstrip('",\'') for line in text.splitlines()]
    else:
        if isinstance(data, dict):
            data = data.get("queries", [])
        candidates = list(data) if isinstance(data, list) else []
    seen = {_norm(query)}
    out: list[str] = []
    for c in candidates:
        if not isinstance(c, str) or not c.strip() or len(c.strip()) > MAX_QUERY_CHARS:
            continue
        if (key := _norm(c)) in seen:
            continue
        seen.add(key)
        out.append(c.strip())
        if len(out) == limit:
            break
    return tuple(out)


def _norm(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip("?？。.!！ ")


def fuse_planned(results: Sequence[Sequence[Hit]], k: int, weight: float = PLANNED_WEIGHT) -> list[Hit]:
    """The ``k`` best hits over the question's own results (``results[0]``) and its
    planned queries' (the rest): each item keeps its best score, a planned query's
    times ``weight``. A hit whose best score came from a planned query records the factor
    as ``boosts["planned"]`` (its ranks and scores are that query's). Pure; ties go by item id.

    >>> from hmem.types import MemoryItem
    >>> def hit(i, s): return Hit(MemoryItem(id=i, user_id="u", text=i), s)
    >>> [(h.item.id, h.score, dict(h.boosts)) for h in fuse_planned([[hit("a", 0.9)], [hit("b", 1.0), hit("a", 1.0)]], 3)]
    [('a', 0.9, {}), ('b', 0.8, {'planned': 0.8})]
    """
    best: dict[str, Hit] = {}
    for i, hits in enumerate(results):
        for h in hits:
            score = h.score if i == 0 else h.score * weight
            have = best.get(h.item.id)
            if have is not None and have.score >= score:
                continue
            best[h.item.id] = h if i == 0 else replace(h, score=score, boosts={**h.boosts, "planned": weight})
    return sorted(best.values(), key=lambda h: (-h.score, h.item.id))[:k]


class LLMQueryPlanner:
    """A :class:`QueryPlanner` that asks ``llm`` (``model``: default the LLM's own) for
    up to ``max_queries`` queries, remembering the last ``cache_size`` questions' plans
    (a plan depends on the question's text only). An LLM failure is logged and gives
    ``()``: recall goes on with the question alone.

    Example::

        planner = LLMQueryPlanner(OpenAICompatibleLLM(base_url=..., api_key=..., model="gpt-4o-mini"))
        planner.plan("What activities does Mel do with her family?")
        # ('Mel swimming with the kids', 'Mel family camping trip', 'Mel museum with kids')
    """

    def __init__(self, llm: LLM, *, model: str | None = None, max_queries: int = 3, cache_size: int = 256) -> None:
        if isinstance(max_queries, bool) or not isinstance(max_queries, int) or not 1 <= max_queries <= MAX_PLANNED_QUERIES:
            raise ConfigError(f"max_queries must be an int from 1 to {MAX_PLANNED_QUERIES}, got {max_queries!r}")
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 0:
            raise ConfigError(f"cache_size must be an int >= 0, got {cache_size!r}")
        self.llm, self.model, self.max_queries, self.cache_size = llm, model, max_queries, cache_size
        # lru_cache keeps no result of a call that raised: a failed question is asked again.
        self._ask = functools.lru_cache(maxsize=cache_size)(self._ask_llm)

    def __repr__(self) -> str:  # shown by Memory.stats and `hmem inspect`
        return f"LLMQueryPlanner(model={self.model!r}, max_queries={self.max_queries})"

    def plan(self, query: str) -> tuple[str, ...]:
        try:
            return self._ask(query)
        except HmemError as exc:  # down, timeout, refused key: recall answers without a plan
            log.warning("query planner: the LLM failed (%s: %s); recalling with the question alone",
                        type(exc).__name__, exc)
            return ()

    def _ask_llm(self, query: str) -> tuple[str, ...]:
        messages = [Message(role="system", content=_PROMPT.format(n=self.max_queries)),
                    Message(role="user", content=query)]
        reply = self.llm.complete(messages, model=self.model, temperature=0.0, max_tokens=60 * self.max_queries,
                                  json_mode=True)
        return parse_queries(reply.text, query, self.max_queries)
