"""Stamps and staged rebuilds of :class:`hmem.backends.chroma.ChromaVectorIndex`.

A user's collection records the embedder that filled it in its metadata
(``hmem_embedder``, ``hmem_dimension``). A rebuild for a new embedder fills a staging
collection ``<live>-rx-<digest of the stamp>`` beside the live one (each vector with the
fingerprint of its text, ``_hmem_fp``, so a resumed run skips what is done and redoes
what changed), then commits by renames, each one atomic in Chroma:

1. mark the staging collection ``hmem_commit``;
2. rename the live collection to ``<live>-old``;
3. rename the staging collection to ``<live>`` (stamp kept, staging marks dropped);
4. delete ``<live>-old``.

A crash between two steps is finished by :func:`recover` on the next look at the user
(``stamp``/``staged``): with ``-old`` and a live collection, step 4; with ``-old`` and no
live one, step 3 if a staging collection was marked, else the old collection goes back.
A query therefore sees the old vectors or the new ones, never a mix (between steps 2 and
3, for the time of one rename, it sees none).

Example (the helpers on metadata)::

    >>> from hmem.protocols import IndexStamp
    >>> meta_stamp({"hmem_user": "u", **stamp_meta(IndexStamp("e5", 384))})
    IndexStamp(embedder='e5', dimension=384)
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from hmem.backends.memory.items import check_ids
from hmem.backends.memory.vectors import check_fingerprints, check_vectors
from hmem.errors import BackendUnavailable, ConfigError, HmemError, InvalidInput
from hmem.protocols import IndexStamp

__all__ = ["MAX_CHROMA_KEYS", "ChromaStage", "check_chroma_metadata", "get_collection", "guard", "meta_stamp",
           "paged_metadatas", "recover", "sample_dimension", "staging_name", "stamp_collection", "stamp_meta"]

log = logging.getLogger("hmem.backends.chroma")

_T = TypeVar("_T")
FP_KEY = "_hmem_fp"
_PAGE = 5000
_BATCH = 4000  # below Chroma's max batch size


def guard(fn: Callable[[], _T]) -> _T:
    """Run a Chroma call; its errors become hmem's (``NotFoundError`` passes through)."""
    from chromadb.errors import InvalidArgumentError, NotFoundError

    try:
        return fn()
    except (HmemError, NotFoundError):
        raise
    except InvalidArgumentError as exc:
        raise InvalidInput(f"Chroma rejected the request: {exc}", field="vectors") from exc
    except Exception as exc:
        raise BackendUnavailable(f"Chroma call failed: {type(exc).__name__}: {exc}") from exc


#: The most metadata keys one vector may carry into Chroma. Embedded Chroma writes a
#: record's keys in one SQLite statement of six variables per key (32,766 at most): it
#: logs a record of more than 5,461 keys, then fails every compaction of the collection
#: after it, and with it each later read and write of that user.
MAX_CHROMA_KEYS = 4096


def check_chroma_metadata(ids: Sequence[str], metadatas: Sequence[Mapping[str, Any]]) -> None:
    """Refuse (:class:`~hmem.errors.InvalidInput`, naming the vector) metadata that
    Chroma would take into its log and then choke on, or fail with a bare ``TypeError``:
    more than :data:`MAX_CHROMA_KEYS` keys, or text that is not valid UTF-8."""
    for doc_id, meta in zip(ids, metadatas, strict=True):
        if len(meta) > MAX_CHROMA_KEYS:
            raise InvalidInput(f"the metadata of vector {doc_id!r} has {len(meta):,} keys; Chroma takes at most "
                               f"{MAX_CHROMA_KEYS:,} per vector (more would fail every later read and write of the "
                               "collection)", field="metadatas")
        for key, value in meta.items():
            for text in (key, value) if isinstance(value, str) else (key,):
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:
                    raise InvalidInput(f"the metadata of vector {doc_id!r} is not valid UTF-8 (key {key!r})",
                                       field="metadatas") from None


def stamp_meta(stamp: IndexStamp) -> dict[str, Any]:
    return {"hmem_embedder": stamp.embedder, "hmem_dimension": stamp.dimension}


def meta_stamp(meta: Mapping[str, Any] | None) -> IndexStamp | None:
    """The stamp recorded in a collection's metadata, or None."""
    meta = meta or {}
    name, dim = meta.get("hmem_embedder"), meta.get("hmem_dimension")
    if isinstance(name, str) and isinstance(dim, int) and not isinstance(dim, bool):
        return IndexStamp(name, dim)
    return None


def plain_meta(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """Metadata ``modify`` accepts back: Chroma refuses any ``hnsw:`` key once created
    (the cosine space stays in the collection's configuration)."""
    return {k: v for k, v in (meta or {}).items() if not k.startswith("hnsw:")}


def staging_name(live: str, stamp: IndexStamp) -> str:
    digest = hashlib.sha256(f"{stamp.embedder}\x1f{stamp.dimension}".encode()).hexdigest()[:12]
    return f"{live}-rx-{digest}"


def sample_dimension(col: Any, where: Mapping[str, Any] | None) -> int | None:
    """The dimension of one stored vector, or None when there is none."""
    got = guard(lambda: col.get(where=where, limit=1, include=["embeddings"]))
    embeddings = got.get("embeddings")
    if embeddings is None or len(embeddings) == 0:
        return None
    return len(embeddings[0])


def paged_metadatas(col: Any, where: Mapping[str, Any] | None = None) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """``(id, metadata)`` of every vector (matching ``where``), a page at a time."""
    offset = 0
    while True:
        got = guard(functools.partial(col.get, where=where, include=["metadatas"], limit=_PAGE, offset=offset))
        yield from ((i, m or {}) for i, m in zip(got["ids"], got["metadatas"] or [], strict=True))
        if len(got["ids"]) < _PAGE:
            return
        offset += _PAGE


def stamp_collection(client: Any, name: str, meta: Mapping[str, Any], stamp: IndexStamp) -> Any:
    """Collection ``name`` stamped ``stamp``: created stamped in one call (two processes
    racing cannot both win), or an unstamped one of the same dimension stamped now.
    Another stamp raises :class:`ConfigError`."""
    col = guard(lambda: client.get_or_create_collection(
        name, embedding_function=None, metadata={"hnsw:space": "cosine", **meta, **stamp_meta(stamp)}))
    if meta_stamp(col.metadata) is None:
        dim = sample_dimension(col, None)
        if dim is not None and dim != stamp.dimension:
            raise InvalidInput(f"the collection holds vectors of dimension {dim}, the stamp {stamp.dimension}",
                               field="stamp")
        guard(lambda: col.modify(metadata={**plain_meta(col.metadata), **stamp_meta(stamp)}))
        col = get_collection(client, name)
    have = meta_stamp(col.metadata if col is not None else None)
    if have != stamp:
        raise ConfigError(f"the vector collection {name} is stamped {have}; it cannot take {stamp} "
                          "(another process embeds with a different model?)")
    return col


def get_collection(client: Any, name: str) -> Any | None:
    from chromadb.errors import NotFoundError

    try:
        return guard(lambda: client.get_collection(name, embedding_function=None))
    except NotFoundError:
        return None


def _delete(client: Any, name: str) -> None:
    from chromadb.errors import NotFoundError

    with contextlib.suppress(NotFoundError):
        guard(lambda: client.delete_collection(name))


def _promote(col: Any, live: str) -> None:
    meta = {k: v for k, v in plain_meta(col.metadata).items() if k not in ("hmem_staging", "hmem_commit")}
    guard(lambda: col.modify(name=live, metadata=meta))


def recover(client: Any, live: str) -> None:
    """Finish (or undo) a commit a crash interrupted; a no-op when none was."""
    old = get_collection(client, f"{live}-old")
    if old is None:
        return
    if get_collection(client, live) is not None:
        _delete(client, f"{live}-old")
        return
    marked = [c for c in guard(client.list_collections)
              if c.name.startswith(f"{live}-rx-") and (c.metadata or {}).get("hmem_commit")]
    if marked:
        _promote(get_collection(client, marked[0].name), live)
        _delete(client, f"{live}-old")
        log.warning("finished an interrupted vector rebuild of collection %s", live)
    else:
        guard(lambda: old.modify(name=live))
        log.warning("undid an interrupted vector rebuild of collection %s", live)


class ChromaStage:
    """:class:`~hmem.protocols.StagedVectors` in a staging collection (see the module)."""

    def __init__(self, client: Any, user_id: str, live: str, stamp: IndexStamp,
                 on_commit: Callable[[], None]) -> None:
        self._client, self._live, self.stamp, self._on_commit = client, live, stamp, on_commit
        self.name = staging_name(live, stamp)
        recover(client, live)
        for other in guard(client.list_collections):
            if other.name.startswith(f"{live}-rx-") and other.name != self.name:
                _delete(client, other.name)  # a rebuild for another embedder, abandoned
        meta = {"hnsw:space": "cosine", "hmem_user": user_id, **stamp_meta(stamp), "hmem_staging": live}
        self._col = guard(lambda: client.get_or_create_collection(self.name, embedding_function=None, metadata=meta))

    def fingerprints(self) -> dict[str, str]:
        return {doc_id: str(meta.get(FP_KEY, "")) for doc_id, meta in paged_metadatas(self._col)}

    def upsert(self, ids: Sequence[str], vectors: Sequence[Sequence[float]],
               metadatas: Sequence[Mapping[str, Any]], fingerprints: Sequence[str]) -> None:
        id_list, mat, metas = check_vectors(ids, vectors, metadatas)
        fps = check_fingerprints(fingerprints, len(id_list))
        if not id_list:
            return
        if mat.shape[1] != self.stamp.dimension:
            raise InvalidInput(f"vectors have dimension {mat.shape[1]}, the rebuild {self.stamp.dimension}",
                               field="vectors")
        rows = [{**m, FP_KEY: fp} for m, fp in zip(metas, fps, strict=True)]
        check_chroma_metadata(id_list, rows)
        for start in range(0, len(id_list), _BATCH):
            end = start + _BATCH
            guard(functools.partial(self._col.upsert, ids=id_list[start:end], embeddings=mat[start:end],
                                    metadatas=rows[start:end]))

    def delete(self, ids: Sequence[str]) -> None:
        id_list = check_ids(ids)
        if id_list:
            guard(lambda: self._col.delete(ids=id_list))

    def commit(self) -> None:
        if get_collection(self._client, self.name) is None:
            raise ConfigError(f"the staged rebuild {self.name} is gone (committed or replaced); start a new one")
        guard(lambda: self._col.modify(metadata={**plain_meta(self._col.metadata), "hmem_commit": 1}))
        live = get_collection(self._client, self._live)
        if live is not None:
            guard(lambda: live.modify(name=f"{self._live}-old"))
        _promote(self._col, self._live)
        _delete(self._client, f"{self._live}-old")
        self._on_commit()
