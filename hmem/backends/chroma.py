"""Chroma :class:`~hmem.protocols.VectorIndex` (embedded ``PersistentClient`` or a
``chroma run`` server through ``HttpClient``).

hmem always passes its own vectors; collections are opened with
``embedding_function=None`` so Chroma never loads (or downloads) its default ONNX
model. Cosine space; score = 1 − cosine distance.

Per-user scoping (measured in ``bench/bench_recall.py``, see ``docs/longterm.md``):

* ``scoping="collection"`` (default) — one collection per user, named
  ``<prefix>-<slug>-<sha256(user)[:24]>``: a user's query only touches that
  user's HNSW graph, so an unfiltered query stays ~1–2 ms at 10k items.
* ``scoping="where"`` — one shared collection, every vector tagged ``_hmem_user``
  and every query filtered by it (several times slower at 10k items per user).

Each collection records the embedder that filled it (``stamp``/``set_stamp``; with
``scoping="where"`` one stamp covers every user of the shared collection), and
``staged`` rebuilds a user's collection for a new embedder and swaps it in by renames
(``scoping="collection"`` only; see :mod:`hmem.backends._chroma_stamps`).

Example::

    >>> import tempfile
    >>> idx = ChromaVectorIndex(chroma_persistent_client(tempfile.mkdtemp()))
    >>> idx.upsert("alice", ["a"], [[1.0, 0.0]])
    >>> [h.id for h in idx.query("alice", [1.0, 0.0], k=5)]
    ['a']
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from hmem.backends._chroma_stamps import (
    ChromaStage,
    check_chroma_metadata,
    get_collection,
    guard,
    meta_stamp,
    paged_metadatas,
    recover,
    sample_dimension,
    stamp_collection,
)
from hmem.backends.memory.items import check_ids
from hmem.backends.memory.vectors import (
    check_k,
    check_query,
    check_query_ids,
    check_query_vector,
    check_stamp,
    check_vectors,
    check_where,
)
from hmem.errors import BackendUnavailable, ConfigError, InvalidInput
from hmem.protocols import IndexStamp, ScoredId
from hmem.types import check_id

__all__ = ["ChromaVectorIndex", "chroma_http_client", "chroma_persistent_client", "collection_name"]

_T = TypeVar("_T")
_PREFIX = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_-]{0,62}$")
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]+")
_USER_KEY = "_hmem_user"


def _settings() -> Any:
    from chromadb.config import Settings

    # Telemetry would phone home (posthog); hmem is offline by default.
    return Settings(anonymized_telemetry=False)


def chroma_persistent_client(path: str | os.PathLike[str]) -> Any:
    """An embedded Chroma client storing under ``path`` (telemetry off)."""
    import chromadb

    # Chroma caches its clients per path *string*: a relative path opened again from
    # another working directory would get the first folder's (possibly deleted) store.
    folder = Path(path).expanduser().resolve()
    return chromadb.PersistentClient(path=str(folder), settings=_settings())


def chroma_http_client(host: str = "127.0.0.1", port: int = 8000) -> Any:
    """A client of a ``chroma run`` server (telemetry off)."""
    import chromadb

    try:
        return chromadb.HttpClient(host=host, port=port, settings=_settings())
    except Exception as exc:  # chromadb raises plain ValueError/ConnectError when down
        raise BackendUnavailable(
            f"cannot reach the Chroma server at {host}:{port}: {exc}. Start it with "
            f"`chroma run --path DIR --host {host} --port {port}`."
        ) from exc


def collection_name(prefix: str, user_id: str) -> str:
    """A valid, collision-free Chroma collection name for ``user_id``.

    Chroma allows 3–512 chars of ``[a-zA-Z0-9._-]`` starting and ending alphanumeric;
    user ids may hold anything, so the name is a readable slug plus a hash of the id.

    >>> collection_name("hmem", "Ann Lee/中文")
    'hmem-Ann_Lee_-0dd8125777191d1f5a2388fc'
    """
    slug = _UNSAFE.sub("_", user_id)[:32]
    digest = hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:24]
    return f"{prefix}-{slug}-{digest}"


class ChromaVectorIndex:
    """Vectors in Chroma; ``client`` is built by the caller (see module helpers)."""

    def __init__(
        self,
        client: Any,
        *,
        collection_prefix: str = "hmem",
        scoping: Literal["collection", "where"] = "collection",
    ) -> None:
        if not isinstance(collection_prefix, str) or not _PREFIX.match(collection_prefix):
            raise ConfigError("collection_prefix must be 1-63 chars of [a-zA-Z0-9_-] starting alphanumeric")
        if scoping not in ("collection", "where"):
            raise ConfigError("scoping must be 'collection' or 'where'")
        self._client = client
        self._prefix = collection_prefix
        self._scoping = scoping
        self._cache: dict[str, Any] = {}
        self._known: dict[str, IndexStamp] = {}  # collection name -> the stamp this index last saw
        self._lock = threading.Lock()

    # -- collections --------------------------------------------------------------

    def _name(self, user_id: str) -> str:
        if self._scoping == "where":
            return f"{self._prefix}-shared"
        return collection_name(self._prefix, user_id)

    def _collection(self, user_id: str, *, create: bool) -> Any | None:
        """The user's collection (cached handle). A collection this index saw stamped is
        only ever reopened with that stamp: recreated stamped after another process
        deleted it, refused (``ConfigError``) if another embedder took it meanwhile."""
        name = self._name(user_id)
        with self._lock:
            cached, known = self._cache.get(name), self._known.get(name)
        if cached is not None:
            return cached
        meta: dict[str, Any] = {"hmem_user": user_id} if self._scoping == "collection" else {}
        if create and known is not None:
            col = stamp_collection(self._client, name, meta, known)
        elif create:
            col = self._guard(lambda: self._client.get_or_create_collection(
                name, embedding_function=None, metadata={"hnsw:space": "cosine", **meta}))
        else:
            col = get_collection(self._client, name)
            if col is None:
                return None
        found = meta_stamp(col.metadata)
        if known is not None and found not in (None, known):
            raise ConfigError(f"the vectors of user {user_id!r} were rebuilt for {found} while this process uses "
                              f"{known}: restart it with the embedder the index now holds")
        with self._lock:
            self._cache[name] = col
            if found is not None:
                self._known[name] = found
        return col

    def _with_collection(self, user_id: str, create: bool, fn: Callable[[Any], _T], default: _T) -> _T:
        """Run ``fn(collection)``; if the cached handle went stale (collection deleted or
        rebuilt by another instance), drop it and try once more (see :meth:`_collection`)."""
        from chromadb.errors import NotFoundError

        for attempt in range(2):
            col = self._collection(user_id, create=create)
            if col is None:
                return default
            try:
                return self._guard(functools.partial(fn, col))
            except NotFoundError:
                with self._lock:
                    self._cache.pop(self._name(user_id), None)
                if attempt == 1:
                    raise BackendUnavailable(f"Chroma collection for user {user_id!r} vanished twice") from None
        return default  # pragma: no cover

    _guard = staticmethod(guard)

    def _key(self, user_id: str, doc_id: str) -> str:
        # One shared collection holds every user: prefix ids so two users' item ids never collide.
        if self._scoping == "where":
            return f"{hashlib.sha256(user_id.encode()).hexdigest()[:24]}:{doc_id}"
        return doc_id

    def _unkey(self, key: str) -> str:
        return key.split(":", 1)[1] if self._scoping == "where" else key

    def _where(self, user_id: str, cond: Mapping[str, Any]) -> dict[str, Any] | None:
        """A canonical ``where`` (plus the user, in a shared collection) as Chroma's filter."""
        full = dict(cond)
        if self._scoping == "where":
            full[_USER_KEY] = {"$eq": user_id}
        clauses = [{key: c} for key, c in full.items()]
        return None if not clauses else clauses[0] if len(clauses) == 1 else {"$and": clauses}

    # -- the port -----------------------------------------------------------------

    def upsert(
        self,
        user_id: str,
        ids: Sequence[str],
        vectors: Sequence[Sequence[float]],
        metadatas: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        check_id(user_id, "user_id")
        id_list, mat, metas = check_vectors(ids, vectors, metadatas)
        if not id_list:
            return
        if self._scoping == "where":
            metas = [{**m, _USER_KEY: user_id} for m in metas]
        check_chroma_metadata(id_list, metas)  # before Chroma logs a record it cannot apply
        keys = [self._key(user_id, i) for i in id_list]
        chroma_metas = [m or None for m in metas]  # Chroma rejects an empty dict, accepts None

        def run(col: Any) -> None:
            stamp = meta_stamp(col.metadata)
            if stamp is not None and stamp.dimension != mat.shape[1]:
                raise InvalidInput(f"vectors have dimension {mat.shape[1]} but this user's index is stamped "
                                   f"{stamp.embedder} (dim {stamp.dimension})", field="vectors")
            for start in range(0, len(keys), 4000):  # below Chroma's max batch size
                end = start + 4000
                col.upsert(ids=keys[start:end], embeddings=mat[start:end], metadatas=chroma_metas[start:end])

        self._with_collection(user_id, True, run, None)

    def query(
        self, user_id: str, vector: Sequence[float], k: int, where: Mapping[str, Any] | None = None
    ) -> list[ScoredId]:
        vec, cond = check_query(user_id, vector, k, where)
        chroma_where = self._where(user_id, cond)

        def run(col: Any) -> list[ScoredId]:
            res = col.query(query_embeddings=[vec], n_results=k, where=chroma_where, include=["distances"])
            ids, dists = res["ids"][0], res["distances"][0]
            return [ScoredId(self._unkey(i), 1.0 - float(d)) for i, d in zip(ids, dists, strict=True)]

        return self._with_collection(user_id, False, run, [])

    def query_many(
        self, user_id: str, vectors: Sequence[Sequence[float]], k: int, where: Mapping[str, Any] | None = None
    ) -> list[list[ScoredId]]:
        """:meth:`query` for many vectors in one round trip (used by batched dedup)."""
        check_id(user_id, "user_id")
        check_k(k)
        if not vectors:
            return []
        vecs = [check_query_vector(v) for v in vectors]
        chroma_where = self._where(user_id, check_where(where))

        def run(col: Any) -> list[list[ScoredId]]:
            res = col.query(query_embeddings=vecs, n_results=k, where=chroma_where, include=["distances"])
            return [[ScoredId(self._unkey(i), 1.0 - float(d)) for i, d in zip(ids, dists, strict=True)]
                    for ids, dists in zip(res["ids"], res["distances"], strict=True)]

        return self._with_collection(user_id, False, run, [[] for _ in vecs])

    def query_ids(self, user_id: str, vector: Sequence[float], k: int, ids: Collection[str]) -> list[ScoredId]:
        """:meth:`query` restricted to ``ids`` (a filtered recall's allowed set). Chroma
        searches just those ids, 4-5x faster than the equivalent metadata ``where``."""
        vec, wanted = check_query_ids(user_id, vector, k, ids)
        keys = [self._key(user_id, i) for i in wanted]
        if not keys:
            return []
        chroma_where = {_USER_KEY: {"$eq": user_id}} if self._scoping == "where" else None

        def run(col: Any) -> list[ScoredId]:
            from chromadb.errors import ChromaError, NotFoundError

            try:
                res = col.query(query_embeddings=[vec], ids=keys, n_results=k, where=chroma_where,
                                include=["distances"])
            except NotFoundError:
                raise
            except ChromaError:
                # Chroma fails the whole query if one id is absent (e.g. an item whose
                # indexing was interrupted): retry with the ids it has.
                present = col.get(ids=keys, include=[])["ids"]
                if not present:
                    return []
                res = col.query(query_embeddings=[vec], ids=present, n_results=k, where=chroma_where,
                                include=["distances"])
            return [ScoredId(self._unkey(i), 1.0 - float(d)) for i, d in zip(res["ids"][0], res["distances"][0],
                                                                           strict=True)]

        return self._with_collection(user_id, False, run, [])

    def delete(self, user_id: str, ids: Sequence[str]) -> None:
        check_id(user_id, "user_id")
        keys = [self._key(user_id, i) for i in check_ids(ids)]
        if keys:
            self._with_collection(user_id, False, lambda col: col.delete(ids=keys), None)

    def delete_user(self, user_id: str) -> None:
        from chromadb.errors import NotFoundError

        check_id(user_id, "user_id")
        if self._scoping == "where":
            self._with_collection(user_id, False, lambda col: col.delete(where={_USER_KEY: user_id}), None)
            return
        name = self._name(user_id)
        with self._lock:
            self._cache.pop(name, None)
            self._known.pop(name, None)  # with its stamp: any embedder may start the user again
        with contextlib.suppress(NotFoundError):
            self._guard(lambda: self._client.delete_collection(name))

    def count(self, user_id: str) -> int:
        check_id(user_id, "user_id")
        if self._scoping == "where":
            return self._with_collection(
                user_id, False, lambda col: len(col.get(where={_USER_KEY: user_id}, include=[])["ids"]), 0
            )
        return self._with_collection(user_id, False, lambda col: int(col.count()), 0)

    # -- stamps and rebuilds (see hmem.protocols.VectorIndex) --------------------------

    def _fresh(self, user_id: str) -> Any | None:
        """The user's collection as Chroma has it now (another process may have stamped
        or rebuilt it); refreshes the cached handle."""
        name = self._name(user_id)
        if self._scoping == "collection":
            recover(self._client, name)
        col = get_collection(self._client, name)
        stamp = None if col is None else meta_stamp(col.metadata)
        with self._lock:
            if col is None:
                self._cache.pop(name, None)
            else:
                self._cache[name] = col
            if stamp is not None:  # what the store checks its embedder against, from now on
                self._known[name] = stamp
        return col

    def _user_where(self, user_id: str) -> dict[str, Any] | None:
        return {_USER_KEY: user_id} if self._scoping == "where" else None

    def stamp(self, user_id: str) -> IndexStamp | None:
        check_id(user_id, "user_id")
        col = self._fresh(user_id)
        if col is None:
            return None
        found = meta_stamp(col.metadata)
        if found is not None:
            return found
        dim = sample_dimension(col, self._user_where(user_id))
        return None if dim is None else IndexStamp(None, dim)

    def set_stamp(self, user_id: str, stamp: IndexStamp) -> None:
        check_id(user_id, "user_id")
        check_stamp(stamp)
        name = self._name(user_id)
        col = stamp_collection(self._client, name, {"hmem_user": user_id} if self._scoping == "collection" else {},
                               stamp)
        with self._lock:
            self._cache[name], self._known[name] = col, stamp

    def users(self) -> list[str]:
        if self._scoping == "where":
            col = get_collection(self._client, self._name("any"))
            return [] if col is None else sorted({str(m[_USER_KEY]) for _, m in paged_metadatas(col) if _USER_KEY in m})
        out = set()
        for col in self._guard(self._client.list_collections):
            user = (col.metadata or {}).get("hmem_user")
            if isinstance(user, str) and col.name == collection_name(self._prefix, user):
                out.add(user)
        return sorted(out)

    def staged(self, user_id: str, stamp: IndexStamp) -> ChromaStage:
        check_id(user_id, "user_id")
        check_stamp(stamp)
        if self._scoping == "where":
            raise ConfigError("rebuilding vectors for a new embedder (hmem reindex) needs scoping='collection': one "
                              "shared collection holds one embedder for every user")
        name = self._name(user_id)

        def committed() -> None:
            with self._lock:
                self._cache.pop(name, None)
                self._known[name] = stamp

        return ChromaStage(self._client, user_id, name, stamp, committed)
