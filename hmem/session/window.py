"""Window policies: which messages of a session buffer stay, which are evicted.

Pure functions on values. Three policies share one set of rules:

* **message** keeps at most the last ``max_messages`` messages;
* **token** evicts the oldest messages until the kept list counts at most ``budget``
  tokens (``tokenizer.count_messages``, per-message overhead included);
  each message is counted once (``count_message``) and lists are costed by prefix
  sums, relying on the :class:`~hmem.protocols.Tokenizer` contract
  ``count_messages(ms) == sum(count_message(m) for m in ms) + count_messages([])``;
* **hybrid** waits until the buffer passes ``threshold × budget`` (and holds at least
  ``min_messages`` messages), then evicts one oldest block down to ``target × budget``.
  Its ``evicted`` list is the block *to be summarized, oldest first*.

Rules every policy obeys (see docs/window.md):

* system and developer messages are never evicted;
* the current turn (the last user message and everything after it) is never evicted;
* an assistant message with tool calls and its tool results are kept or evicted
  together (:func:`hmem._groups.group_messages`);
* an orphan tool message (no calling assistant message right before it) is always
  evicted — even inside the current turn — so ``kept`` never holds one;
* evicted non-protected messages are always the *oldest* ones: ``kept`` minus the
  protected messages is a contiguous, newest suffix of the buffer;
* ``kept + evicted`` is exactly the input, each list in input order;
* if the protected messages alone exceed the limit, exactly they are kept.

Example::

    >>> from hmem.types import Message
    >>> msgs = [Message(role="user", content=f"m{i}") for i in range(5)]
    >>> r = message_window(msgs, 2)
    >>> [m.content for m in r.kept], [m.content for m in r.evicted]
    (['m3', 'm4'], ['m0', 'm1', 'm2'])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from hmem._checks import check_int_at_least, check_tokenizer, is_finite
from hmem._groups import current_turn_start, group_messages, is_orphan_tool
from hmem.errors import InvalidInput
from hmem.protocols import Tokenizer
from hmem.types import Message, as_datetime, utcnow

__all__ = ["WindowResult", "hybrid_window", "message_window", "token_window"]

_PINNED_ROLES = frozenset({"system", "developer"})


@dataclass(frozen=True)
class WindowResult:
    """The outcome of a window policy; both lists keep the input order.

    For :func:`hybrid_window`, ``evicted`` is the block to be summarized, oldest first.
    """

    kept: list[Message]
    evicted: list[Message]


@dataclass(frozen=True)
class _Plan:
    """The buffer cut into groups, each tagged by what the policies may do with it."""

    messages: list[Message]
    groups: list[list[int]]  # message indices per group, in order
    protected: list[int]  # group numbers never evicted
    evictable: list[int]  # group numbers that may be evicted, oldest first
    orphans: list[int]  # group numbers always evicted

    def result(self, evict_count: int) -> WindowResult:
        """Evict the ``evict_count`` oldest evictable groups plus every orphan."""
        dropped = set(self.orphans) | set(self.evictable[:evict_count])
        kept: list[Message] = []
        evicted: list[Message] = []
        for number, indices in enumerate(self.groups):
            target = evicted if number in dropped else kept
            target.extend(self.messages[i] for i in indices)
        return WindowResult(kept=kept, evicted=evicted)

    def costs(self, cost: Callable[[Message], int], base: int = 0) -> list[int]:
        """``totals[e]``: what the kept list costs after evicting ``e`` groups.

        ``base`` plus the per-message ``cost`` of every protected message and of the
        evictable groups from rank ``e`` on (orphans never count: they always go).
        Each message is costed once, so a policy is O(n) in the buffer, not O(n log n)
        recounts of whole lists.
        """
        group_cost = [sum(cost(self.messages[i]) for i in self.groups[g]) for g in self.evictable]
        fixed = base + sum(cost(self.messages[i]) for g in self.protected for i in self.groups[g])
        totals = [fixed] * (len(group_cost) + 1)
        for rank in range(len(group_cost) - 1, -1, -1):
            totals[rank] = totals[rank + 1] + group_cost[rank]
        return totals


def _coerce(messages: object) -> list[Message]:
    if isinstance(messages, str | bytes | dict) or not isinstance(messages, Sequence):
        raise InvalidInput("messages must be a list of Message values", field="messages")
    out: list[Message] = []
    for index, raw in enumerate(messages):
        if isinstance(raw, Message):
            out.append(raw)
            continue
        try:
            out.append(Message.from_openai(raw))
        except InvalidInput as exc:
            where = f"messages[{index}]" + (f".{exc.field}" if exc.field else "")
            raise InvalidInput(f"{where}: {exc}", field=where) from None
    return out


def _check_fraction(value: object, field_name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not is_finite(value):
        raise InvalidInput(f"{field_name} must be a finite number", field=field_name)
    if not 0 < value <= 1:
        raise InvalidInput(f"{field_name} must be in (0, 1], got {value}", field=field_name)
    return float(value)


def _cutoff(max_age: object, now: object) -> datetime | None:
    if max_age is None:
        if now is not None:
            as_datetime(now, "now")  # validate anyway: a bad value is a bug even if unused
        return None
    if not isinstance(max_age, timedelta):
        raise InvalidInput("max_age must be a datetime.timedelta", field="max_age")
    if max_age < timedelta(0):
        raise InvalidInput(f"max_age must not be negative, got {max_age}", field="max_age")
    # Reading the clock is the one impurity, and only when the caller gave no `now`.
    moment = utcnow() if now is None else as_datetime(now, "now")
    try:
        return moment - max_age
    except OverflowError:  # the cutoff lies before year 1: nothing can be that old
        return None


def _plan(messages: list[Message], cutoff: datetime | None) -> tuple[_Plan, int]:
    """Group the buffer; return the plan and how many evictable groups age forces out."""
    turn_start = current_turn_start(messages)
    groups: list[list[int]] = []
    position = 0
    for group in group_messages(messages):
        groups.append(list(range(position, position + len(group))))
        position += len(group)
    protected: list[int] = []
    evictable: list[int] = []
    orphans: list[int] = []
    for number, indices in enumerate(groups):
        first = messages[indices[0]]
        if is_orphan_tool([first]):
            orphans.append(number)
        elif first.role in _PINNED_ROLES or indices[0] >= turn_start:
            protected.append(number)
        else:
            evictable.append(number)
    forced = 0
    if cutoff is not None:
        # A group is expired when all its messages are older than the cutoff. Everything
        # older than the newest expired group goes too, so the kept history stays a
        # contiguous suffix even when timestamps are out of order.
        for rank, number in enumerate(evictable):
            if all(messages[i].created_at < cutoff for i in groups[number]):
                forced = rank + 1
    return _Plan(messages, groups, protected, evictable, orphans), forced


def _fewest_evictions(totals: list[int], start: int, limit: float) -> int:
    """The smallest eviction count >= ``start`` whose kept cost ``totals[e] <= limit``.

    ``totals`` only shrinks as groups leave; when nothing fits, all evictable groups
    go and exactly the protected messages remain.
    """
    last = len(totals) - 1
    for count in range(start, last):
        if totals[count] <= limit:
            return count
    return last


def _token_costs(plan: _Plan, counter: Tokenizer) -> list[int]:
    # The Tokenizer contract: count_messages(ms) == sum(count_message(m)) + count_messages([]).
    return plan.costs(counter.count_message, counter.count_messages([]))


def message_window(
    messages: Sequence[Message],
    max_messages: int,
    *,
    max_age: timedelta | None = None,
    now: datetime | None = None,
) -> WindowResult:
    """Keep the last ``max_messages`` messages (protected ones count toward the limit).

    Whole groups only, so fewer than ``max_messages`` may remain when a tool-call
    group does not fit the remaining room.

    Example::

        >>> from hmem.types import Message
        >>> r = message_window([Message(role="user", content=str(i)) for i in range(3)], 1)
        >>> [m.content for m in r.kept]
        ['2']
    """
    items = _coerce(messages)
    limit = check_int_at_least(max_messages, "max_messages", 0)
    plan, forced = _plan(items, _cutoff(max_age, now))
    count = _fewest_evictions(plan.costs(lambda _: 1), forced, limit)
    return plan.result(count)


def token_window(
    messages: Sequence[Message],
    tokenizer: Tokenizer,
    budget: int,
    *,
    max_age: timedelta | None = None,
    now: datetime | None = None,
) -> WindowResult:
    """Evict the oldest groups until ``tokenizer.count_messages(kept) <= budget``.

    Example::

        >>> from hmem.tokens import get_tokenizer
        >>> from hmem.types import Message
        >>> msgs = [Message(role="user", content="hello " * 50) for _ in range(4)]
        >>> r = token_window(msgs, get_tokenizer(), 120)  # ~53 tokens per message
        >>> len(r.kept), len(r.evicted)
        (2, 2)
    """
    items = _coerce(messages)
    counter = check_tokenizer(tokenizer)
    limit = check_int_at_least(budget, "budget", 0)
    plan, forced = _plan(items, _cutoff(max_age, now))
    count = _fewest_evictions(_token_costs(plan, counter), forced, limit)
    return plan.result(count)


def hybrid_window(
    messages: Sequence[Message],
    tokenizer: Tokenizer,
    budget: int,
    *,
    threshold: float = 0.7,
    target: float = 0.5,
    min_messages: int = 10,
    max_age: timedelta | None = None,
    now: datetime | None = None,
) -> WindowResult:
    """Summarize-in-blocks policy: evict a large oldest block, rarely.

    Once the buffer counts more than ``threshold × budget`` tokens and holds at least
    ``min_messages`` messages, the oldest groups are evicted until the rest counts at
    most ``target × budget``. Below the trigger nothing is evicted unless the buffer
    exceeds ``budget`` itself (then the oldest go until it fits). Orphan tool messages
    and, with ``max_age``, expired messages are evicted in any case.

    ``evicted`` is the block to be summarized, oldest first (orphans included: the
    summarizer may read them; they are never re-sent to a model as messages).

    Example::

        >>> from hmem.tokens import get_tokenizer
        >>> from hmem.types import Message
        >>> msgs = [Message(role="user", content="word " * 20) for _ in range(12)]
        >>> r = hybrid_window(msgs, get_tokenizer(), 400)
        >>> len(r.kept) < 12 and r.evicted == msgs[: len(r.evicted)]
        True
    """
    items = _coerce(messages)
    counter = check_tokenizer(tokenizer)
    limit = check_int_at_least(budget, "budget", 0)
    high = _check_fraction(threshold, "threshold")
    low = _check_fraction(target, "target")
    if low > high:
        raise InvalidInput(f"target ({low}) must not exceed threshold ({high})", field="target")
    floor = check_int_at_least(min_messages, "min_messages", 0)
    plan, forced = _plan(items, _cutoff(max_age, now))
    totals = _token_costs(plan, counter)
    tokens = totals[forced]
    if plan.costs(lambda _: 1)[forced] >= floor and tokens > high * limit:
        count = _fewest_evictions(totals, forced, low * limit)
    elif tokens > limit:
        count = _fewest_evictions(totals, forced, limit)
    else:
        count = forced
    return plan.result(count)
