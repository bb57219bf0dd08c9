"""Whole-user operations on the stores: export and import one user's memory as JSONL,
and erase a user (used by :meth:`Memory.export_user`, :meth:`Memory.import_user` and
:meth:`Memory.forget_user`). Everything here takes a :class:`UserStores` (the tier ports
and the long-term store), never a Memory.

One JSON object per line, each with a ``type``:

- ``header``: ``{"type": "header", "format": "hmem-export", "version": 1, "user_id": …}``
- ``message``: a buffered message of a session (``session_id``, ``message`` in the
  OpenAI shape plus ``id``/``created_at``/``metadata``), in buffer order
- ``summary``: a session's rolling summary with its watermark
- ``profile``: one version of a profile key (history order; ``value`` null = deletion)
- ``item``: a long-term item (fact or archived turn) with its id and timestamps

Each item carries its dense vector (float32, base64) and the embedding model's
name; import reuses the vectors when the model matches (so recall ranks exactly as
before) and embeds afresh otherwise, then rebuilds the BM25 entries. Deletions in profile history are replayed at
import time (their original timestamp is kept only in the file), and the history of
a key that is deleted now is not exported (the ProfileStore port lists current keys only).

Example::

    stores = UserStores(sessions, summaries, profile, longterm)
    export_user(stores, "u1", Path("u1.jsonl"))
    import_user(other_stores, Path("u1.jsonl"), user_id="u1-copy")
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from hmem._options import UserStores
from hmem.errors import InvalidInput
from hmem.types import MemoryItem, Message, ProfileEntry, Provenance, SessionSummary, as_datetime, check_id

__all__ = ["FORMAT", "UserStores", "erase_user", "export_user", "import_user"]

FORMAT = "hmem-export"
VERSION = 1


def _iso(dt: datetime | None) -> str | None:
    return None if dt is None else dt.isoformat()


def _records(stores: UserStores, user_id: str) -> Iterator[dict[str, Any]]:
    yield {"type": "header", "format": FORMAT, "version": VERSION, "user_id": user_id}
    for info in reversed(stores.sessions.list_sessions(user_id)):  # oldest session first
        for message in stores.sessions.load(user_id, info.session_id).messages:
            yield {"type": "message", "session_id": info.session_id, "message": message.to_openai(include_meta=True)}
        summary = stores.summaries.get(user_id, info.session_id)
        if summary is not None:
            yield {
                "type": "summary", "session_id": summary.session_id, "text": summary.text,
                "covers_until": summary.covers_until, "folded_count": summary.folded_count,
                "method": summary.method, "updated_at": _iso(summary.updated_at), "tokens": summary.tokens,
            }
    # Least recently confirmed first, so a replay in file order restores the ordering.
    for key in reversed([entry.key for entry in stores.profile.all(user_id)]):
        for entry in stores.profile.history(user_id, key):
            yield _profile_record(entry)
    items = stores.longterm.items.find(user_id)
    model = stores.longterm.embedder.model_name
    for item, vector in zip(items, stores.longterm.vectors_for(items), strict=True):
        yield {
            "type": "item", "id": item.id, "text": item.text, "kind": item.kind, "importance": item.importance,
            "created_at": _iso(item.created_at), "updated_at": _iso(item.updated_at), "session_id": item.session_id,
            "source_message_id": item.source_message_id, "speaker": item.speaker, "metadata": dict(item.metadata),
            "embedding": {"model": model, "float32_b64": _pack(vector)},
        }


def _pack(vector: list[float]) -> str:
    import numpy as np  # only exports and imports need it: importing hmem stays light

    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _unpack(text: str) -> list[float]:
    import numpy as np

    values: list[float] = np.frombuffer(base64.b64decode(text, validate=True), dtype="<f4").astype(float).tolist()
    return values


def _profile_record(entry: ProfileEntry) -> dict[str, Any]:
    value = list(entry.value) if isinstance(entry.value, tuple) else entry.value
    return {
        "type": "profile", "key": entry.key, "value": value, "valid_from": _iso(entry.valid_from),
        "valid_to": _iso(entry.valid_to), "confidence": entry.confidence,
        "confirmed_at": _iso(getattr(entry, "confirmed_at", None)),
        "provenance": {"source": entry.provenance.source, "session_id": entry.provenance.session_id,
                       "message_id": entry.provenance.message_id},
    }


def export_user(stores: UserStores, user_id: str, path: Path) -> int:
    """Write every record of ``user_id`` to ``path``; returns the number of lines."""
    count = 0
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tmp.open("w", encoding="utf-8") as out:
            for record in _records(stores, user_id):
                out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
                count += 1
        tmp.replace(path)  # a crash mid-export never leaves a truncated file under the real name
    except OSError as exc:
        _discard(tmp)
        raise InvalidInput(f"cannot write the export to {path}: {exc.strerror or exc}; choose a writable path",
                           field="path") from None
    except BaseException:
        _discard(tmp)  # a backend failed mid-export: no half-written file stays behind
        raise
    return count


def _discard(tmp: Path) -> None:
    with contextlib.suppress(OSError):  # e.g. its folder could not be created in the first place
        tmp.unlink(missing_ok=True)


def _read(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise InvalidInput(f"export file {path} does not exist", field="path")
    records = []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path} is not UTF-8 text (byte {exc.start}); is it an hmem export?", field="path") from None
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}", field="path") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{path}:{number}: not JSON ({exc.msg})", field="path") from None
        if not isinstance(record, dict) or "type" not in record:
            raise InvalidInput(f"{path}:{number}: each line must be an object with a 'type'", field="path")
        records.append(record)
    if not records or records[0].get("type") != "header" or records[0].get("format") != FORMAT:
        raise InvalidInput(f"{path} is not an hmem export (missing header line)", field="path")
    if records[0].get("version") != VERSION:
        raise InvalidInput(f"{path}: unsupported export version {records[0].get('version')!r}", field="path")
    return records


def import_user(stores: UserStores, path: Path, *, user_id: str | None = None) -> str:
    """Load an export into the stores. Everything is parsed and validated before the
    first write; the target user must have no data (no merge semantics to guess)."""
    records = _read(path)
    user = check_id(user_id or records[0].get("user_id"), "user_id")
    messages: dict[str, list[Message]] = {}
    summaries: list[SessionSummary] = []
    profile: list[dict[str, Any]] = []
    items: list[MemoryItem] = []
    vectors: list[list[float] | None] = []
    model = stores.longterm.embedder.model_name
    try:
        for record in records[1:]:
            kind = record["type"]
            if kind == "message":
                sid = check_id(record["session_id"], "session_id")
                messages.setdefault(sid, []).append(Message.from_openai(record["message"]))
            elif kind == "summary":
                summaries.append(SessionSummary(
                    user_id=user, session_id=check_id(record["session_id"], "session_id"), text=record["text"],
                    covers_until=record["covers_until"], folded_count=int(record["folded_count"]),
                    method=record["method"], updated_at=as_datetime(record["updated_at"]),
                    tokens=int(record.get("tokens", 0)),
                ))
            elif kind == "profile":
                profile.append(_check_profile_record(record))
            elif kind == "item":
                items.append(MemoryItem(
                    id=check_id(record["id"], "id"), user_id=user, text=record["text"], kind=record["kind"],
                    importance=float(record["importance"]), created_at=as_datetime(record["created_at"]),
                    updated_at=as_datetime(record["updated_at"]), session_id=record.get("session_id"),
                    source_message_id=record.get("source_message_id"), speaker=record.get("speaker"),
                    metadata=record.get("metadata") or {},
                ))
                embedding = record.get("embedding") or {}
                same_model = embedding.get("model") == model and embedding.get("float32_b64")
                vectors.append(_unpack(embedding["float32_b64"]) if same_model else None)
            else:
                raise InvalidInput(f"{path}: unknown record type {kind!r}", field="type")
    except (KeyError, TypeError, ValueError, binascii.Error) as exc:
        if isinstance(exc, InvalidInput):
            raise
        raise InvalidInput(f"{path}: malformed record: {exc!r}", field="path") from None
    if stores.sessions.list_sessions(user) or stores.profile.all(user) or stores.longterm.items.count(user):
        raise InvalidInput(f"user {user!r} already has data here; import into an empty user", field="user_id")

    try:
        for sid, batch in messages.items():
            stores.sessions.append(user, sid, batch)
        for summary in summaries:
            stores.summaries.put(summary)
        _replay_profile(stores, user, profile)
        if items:
            # Exported vectors of the same model are reused as they were (no recompute, and
            # recall ranks exactly as before); other items are embedded afresh.
            known = all(v is not None for v in vectors)
            stores.longterm.restore(user, items, [v for v in vectors if v is not None] if known else None)
    except BaseException as exc:
        # The user had no data before: undo the partial import so a failure changes nothing.
        with contextlib.suppress(Exception):  # the original error is the one to report
            erase_user(stores, user)
        if isinstance(exc, KeyError | TypeError | ValueError) and not isinstance(exc, InvalidInput):
            raise InvalidInput(f"{path}: malformed record: {exc!r}; nothing was imported", field="path") from None
        raise
    return user


def erase_user(stores: UserStores, user_id: str) -> dict[str, int]:
    """Delete every record of ``user_id`` in every tier: sessions (with their
    summaries), profile, long-term items. Returns counts per tier."""
    user = check_id(user_id, "user_id")
    sessions = stores.sessions.list_sessions(user)
    for info in sessions:
        stores.sessions.delete(user, info.session_id)
        stores.summaries.delete(user, info.session_id)
    profile_keys = stores.profile.delete_user(user)
    items = stores.longterm.forget(user, all=True)
    return {"sessions": len(sessions), "profile_keys": profile_keys, "items": items}


def _check_profile_record(record: dict[str, Any]) -> dict[str, Any]:
    """The profile store's own rules, applied before the first write of an import."""
    from hmem.profile.model import check_confidence, coerce_value, normalize_key

    normalize_key(record["key"])
    if record["value"] is not None:
        coerce_value(record["value"])
        check_confidence(record["confidence"])
        as_datetime(record["valid_from"])
    return record


def _replay_profile(stores: UserStores, user: str, records: list[dict[str, Any]]) -> None:
    current: dict[str, dict[str, Any]] = {}
    for record in records:
        prov = record.get("provenance") or {}
        provenance = Provenance(prov.get("source", "import"), prov.get("session_id"), prov.get("message_id"))
        if record["value"] is None:
            stores.profile.delete(user, record["key"], provenance=provenance)
            current.pop(record["key"], None)
            continue
        stores.profile.set(
            user, record["key"], record["value"], provenance=provenance,
            confidence=float(record["confidence"]), at=as_datetime(record["valid_from"]),
        )
        if record.get("valid_to") is None:
            current[record["key"]] = record
    # Re-confirm current values in their original order so "most recently confirmed first" survives.
    for record in sorted(current.values(), key=lambda r: r.get("confirmed_at") or r["valid_from"]):
        confirmed = record.get("confirmed_at")
        if confirmed and confirmed != record["valid_from"]:
            stores.profile.set(user, record["key"], record["value"], confidence=float(record["confidence"]),
                            at=as_datetime(confirmed))
