"""In-memory :class:`~hmem.protocols.VectorIndex` (numpy, exact cosine) and the
``where`` dialect every vector index accepts.

``where`` is a mapping of metadata field → condition, all conditions ANDed. A
condition is a scalar (equality) or one operator dict: ``{"$eq"|"$ne"|"$gt"|"$gte"|
"$lt"|"$lte": scalar}`` or ``{"$in"|"$nin": [scalars]}`` — the subset Chroma
supports too, so every backend answers the same question the same way.

Example::

    >>> idx = MemoryVectorIndex()
    >>> idx.upsert("u1", ["a", "b"], [[1.0, 0.0], [0.0, 1.0]], [{"kind": "fact"}, {"kind": "turn"}])
    >>> [h.id for h in idx.query("u1", [1.0, 0.1], k=1, where={"kind": "turn"})]
    ['b']
"""

from __future__ import annotations

import math
import threading
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from hmem.backends.memory.items import check_ids
from hmem.errors import ConfigError, InvalidInput
from hmem.protocols import IndexStamp, ScoredId
from hmem.types import check_id

__all__ = [
    "MemoryVectorIndex",
    "check_fingerprints",
    "check_k",
    "check_query",
    "check_query_ids",
    "check_stamp",
    "check_vectors",
    "check_where",
    "where_matches",
]

_SCALAR_OPS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
_LIST_OPS = frozenset({"$in", "$nin"})


def _is_scalar(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, str | int | bool)


def check_where(where: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Validate ``where`` and return it in canonical ``{field: {op: value}}`` form."""
    if where is None:
        return {}
    if not isinstance(where, Mapping):
        raise InvalidInput("where must be an object of field -> condition", field="where")
    out: dict[str, dict[str, Any]] = {}
    for key, cond in where.items():
        if not isinstance(key, str) or not key or key.startswith("$"):
            raise InvalidInput(f"where keys must be metadata field names, got {key!r}", field="where")
        if isinstance(cond, Mapping):
            if len(cond) != 1:
                raise InvalidInput(f"where[{key!r}] must hold exactly one operator", field="where")
            ((op, value),) = cond.items()
            if op in _SCALAR_OPS and _is_scalar(value):
                out[key] = {op: value}
            elif op in _LIST_OPS and isinstance(value, list | tuple | set | frozenset) and value and all(
                _is_scalar(v) for v in value
            ):
                out[key] = {op: sorted(value, key=repr)}
            else:
                raise InvalidInput(
                    f"where[{key!r}]: unsupported condition {op!r}: {value!r} "
                    f"(use one of {sorted(_SCALAR_OPS | _LIST_OPS)} with scalar / non-empty list values)",
                    field="where",
                )
        elif _is_scalar(cond):
            out[key] = {"$eq": cond}
        else:
            raise InvalidInput(f"where[{key!r}] must be a scalar or an operator object", field="where")
    return out


def _same(a: object, b: object) -> bool:
    # True == 1 in Python but not in Chroma: compare bools only with bools.
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def _ordered(a: object, b: object) -> bool:
    return isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool) and not isinstance(
        b, bool
    )


def where_matches(metadata: Mapping[str, Any], where: Mapping[str, Mapping[str, Any]]) -> bool:
    """Does ``metadata`` satisfy the canonical ``where`` (see :func:`check_where`)?"""
    for key, cond in where.items():
        ((op, value),) = cond.items()
        have = key in metadata
        actual = metadata.get(key)
        if op == "$eq":
            ok = have and _same(actual, value)
        elif op == "$ne":
            ok = not (have and _same(actual, value))
        elif op == "$in":
            ok = have and any(_same(actual, v) for v in value)
        elif op == "$nin":
            ok = not (have and any(_same(actual, v) for v in value))
        else:
            if not (have and _ordered(actual, value)):
                return False
            a, b = float(actual), float(value)  # type: ignore[arg-type]  # _ordered checked both
            ok = {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]
        if not ok:
            return False
    return True


def check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInput(f"k must be a positive integer, got {k!r}", field="k")
    return k


def check_vectors(
    ids: Sequence[str], vectors: Sequence[Sequence[float]], metadatas: Sequence[Mapping[str, Any]] | None
) -> tuple[list[str], NDArray[np.float32], list[dict[str, Any]]]:
    """Validate an upsert batch; return ids, unit-normalised float32 rows, metadata dicts."""
    id_list = check_ids(ids)
    if len(set(id_list)) != len(id_list):
        raise InvalidInput("ids must be unique within one upsert", field="ids")
    if isinstance(vectors, str) or len(vectors) != len(id_list):
        raise InvalidInput(f"vectors must be a list of {len(id_list)} vectors (one per id)", field="vectors")
    if metadatas is not None and len(metadatas) != len(id_list):
        raise InvalidInput(f"metadatas must hold {len(id_list)} entries (one per id)", field="metadatas")
    if not id_list:
        return [], np.zeros((0, 0), dtype=np.float32), []
    try:
        mat = np.asarray(vectors, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidInput("vectors must be equal-length lists of numbers", field="vectors") from None
    if mat.ndim != 2 or mat.shape[1] == 0:
        raise InvalidInput("vectors must be equal-length, non-empty lists of numbers", field="vectors")
    if not np.isfinite(mat).all():
        raise InvalidInput("vectors must not contain NaN or infinity", field="vectors")
    norms = np.linalg.norm(mat, axis=1)
    if (norms == 0).any():
        raise InvalidInput("a zero vector has no direction; cosine similarity is undefined", field="vectors")
    metas: list[dict[str, Any]] = []
    for meta in metadatas or [{}] * len(id_list):
        if not isinstance(meta, Mapping):
            raise InvalidInput("each metadata must be an object", field="metadatas")
        for key, value in meta.items():
            if not isinstance(key, str) or not key or key.startswith(("$", "_hmem")):
                raise InvalidInput(f"metadata key {key!r} is reserved or invalid", field="metadatas")
            if value is not None and not _is_scalar(value):
                raise InvalidInput(f"metadata[{key!r}] must be a string, finite number or bool", field="metadatas")
        metas.append({k: v for k, v in meta.items() if v is not None})
    return id_list, (mat / norms[:, None]).astype(np.float32), metas


def check_query_vector(vector: Sequence[float]) -> NDArray[np.float32]:
    try:
        vec = np.asarray(vector, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidInput("vector must be a list of numbers", field="vector") from None
    if vec.ndim != 1 or vec.size == 0 or not np.isfinite(vec).all():
        raise InvalidInput("vector must be a non-empty list of finite numbers", field="vector")
    norm = float(np.linalg.norm(vec))
    if norm == 0:
        raise InvalidInput("a zero query vector has no direction", field="vector")
    return (vec / norm).astype(np.float32)


def check_query(
    user_id: object, vector: Sequence[float], k: object, where: Mapping[str, Any] | None
) -> tuple[NDArray[np.float32], dict[str, dict[str, Any]]]:
    """Validate the arguments of ``VectorIndex.query`` (every backend): the unit query
    vector and the canonical ``where``."""
    check_id(user_id, "user_id")
    check_k(k)
    return check_query_vector(vector), check_where(where)


def check_query_ids(
    user_id: object, vector: Sequence[float], k: object, ids: Collection[str]
) -> tuple[NDArray[np.float32], list[str]]:
    """Validate the arguments of ``query_ids``: the unit query vector and the ids, sorted."""
    check_id(user_id, "user_id")
    check_k(k)
    return check_query_vector(vector), check_ids(sorted(ids))


def check_stamp(stamp: object) -> IndexStamp:
    """A stamp an index may record: a named embedder and a positive dimension."""
    if not isinstance(stamp, IndexStamp) or not isinstance(stamp.embedder, str) or not stamp.embedder.strip() \
            or len(stamp.embedder) > 500 or isinstance(stamp.dimension, bool) or not isinstance(stamp.dimension, int) \
            or stamp.dimension < 1:
        raise InvalidInput(f"stamp must be IndexStamp(embedder name, dimension >= 1), got {stamp!r}", field="stamp")
    return stamp


def check_fingerprints(fingerprints: Sequence[str], n: int) -> list[str]:
    """One non-empty fingerprint string per staged vector."""
    if isinstance(fingerprints, str) or len(fingerprints) != n or not all(
            isinstance(f, str) and 0 < len(f) <= 200 for f in fingerprints):
        raise InvalidInput(f"fingerprints must be {n} non-empty strings (one per id)", field="fingerprints")
    return list(fingerprints)


def _check_dimension(mat: NDArray[np.float32], dim: int | None) -> None:
    if dim is not None and mat.shape[1] != dim:
        raise InvalidInput(f"vectors have dimension {mat.shape[1]} but this user's index holds {dim}", field="vectors")


class _UserVectors:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.rows: dict[str, tuple[NDArray[np.float32], dict[str, Any]]] = {}
        self.matrix: NDArray[np.float32] | None = None
        self.order: list[str] = []


class _Stage:
    """:class:`~hmem.protocols.StagedVectors` of :class:`MemoryVectorIndex`."""

    def __init__(self, owner: MemoryVectorIndex, user_id: str, stamp: IndexStamp) -> None:
        self._owner, self._user, self.stamp = owner, user_id, stamp
        self._vectors = _UserVectors(stamp.dimension)
        self._fps: dict[str, str] = {}

    def fingerprints(self) -> dict[str, str]:
        with self._owner._lock:
            return dict(self._fps)

    def upsert(self, ids: Sequence[str], vectors: Sequence[Sequence[float]],
               metadatas: Sequence[Mapping[str, Any]], fingerprints: Sequence[str]) -> None:
        id_list, mat, metas = check_vectors(ids, vectors, metadatas)
        fps = check_fingerprints(fingerprints, len(id_list))
        if not id_list:
            return
        _check_dimension(mat, self.stamp.dimension)
        with self._owner._lock:
            for doc_id, row, meta, fp in zip(id_list, mat, metas, fps, strict=True):
                self._vectors.rows[doc_id] = (row, meta)
                self._fps[doc_id] = fp

    def delete(self, ids: Sequence[str]) -> None:
        with self._owner._lock:
            for doc_id in check_ids(ids):
                self._vectors.rows.pop(doc_id, None)
                self._fps.pop(doc_id, None)

    def commit(self) -> None:
        with self._owner._lock:
            if self._owner._stages.get(self._user) is not self:
                raise InvalidInput("this rebuild was replaced or already committed; open a new one", field="stamp")
            self._owner._users[self._user] = self._vectors
            self._owner._stamps[self._user] = self.stamp
            del self._owner._stages[self._user]


class MemoryVectorIndex:
    """Exact cosine search over numpy rows, per user; the reference implementation."""

    def __init__(self) -> None:
        self._users: dict[str, _UserVectors] = {}
        self._stamps: dict[str, IndexStamp] = {}
        self._stages: dict[str, _Stage] = {}
        self._lock = threading.RLock()

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
        with self._lock:
            user = self._users.get(user_id)
            stamp = self._stamps.get(user_id)
            _check_dimension(mat, stamp.dimension if stamp else user.dim if user is not None and user.rows else None)
            if user is None or not user.rows:
                user = self._users[user_id] = _UserVectors(mat.shape[1])
            for doc_id, row, meta in zip(id_list, mat, metas, strict=True):
                user.rows[doc_id] = (row, meta)
            user.matrix = None

    def query(
        self, user_id: str, vector: Sequence[float], k: int, where: Mapping[str, Any] | None = None
    ) -> list[ScoredId]:
        vec, cond = check_query(user_id, vector, k, where)
        with self._lock:
            user = self._users.get(user_id)
            if user is None or not user.rows:
                return []
            if vec.shape[0] != user.dim:
                raise InvalidInput(f"query vector has dimension {vec.shape[0]}, the index {user.dim}", field="vector")
            if user.matrix is None:
                user.order = list(user.rows)
                user.matrix = np.stack([user.rows[i][0] for i in user.order])
            order, matrix = user.order, user.matrix
            keep = [n for n, i in enumerate(order) if not cond or where_matches(user.rows[i][1], cond)]
        if not keep:
            return []
        sims = matrix[keep] @ vec
        top = np.argsort(-sims, kind="stable")[:k]
        return [ScoredId(order[keep[j]], float(sims[j])) for j in top]

    def query_many(
        self, user_id: str, vectors: Sequence[Sequence[float]], k: int, where: Mapping[str, Any] | None = None
    ) -> list[list[ScoredId]]:
        """:meth:`query` for many vectors (the batched form :class:`ChromaVectorIndex` has too)."""
        return [self.query(user_id, v, k, where) for v in vectors]

    def query_ids(self, user_id: str, vector: Sequence[float], k: int, ids: Collection[str]) -> list[ScoredId]:
        """:meth:`query` restricted to ``ids`` (the allowed set of a filtered recall)."""
        vec, wanted = check_query_ids(user_id, vector, k, ids)
        with self._lock:
            user = self._users.get(user_id)
            if user is None:
                return []
            if vec.shape[0] != user.dim:
                raise InvalidInput(f"query vector has dimension {vec.shape[0]}, the index {user.dim}", field="vector")
            rows = [(i, user.rows[i][0]) for i in wanted if i in user.rows]
        if not rows:
            return []
        sims = np.stack([r for _, r in rows]) @ vec
        top = np.argsort(-sims, kind="stable")[:k]
        return [ScoredId(rows[j][0], float(sims[j])) for j in top]

    def delete(self, user_id: str, ids: Sequence[str]) -> None:
        check_id(user_id, "user_id")
        id_list = check_ids(ids)
        with self._lock:
            user = self._users.get(user_id)
            if user is None:
                return
            for doc_id in id_list:
                user.rows.pop(doc_id, None)
            user.matrix = None

    def delete_user(self, user_id: str) -> None:
        check_id(user_id, "user_id")
        with self._lock:
            self._users.pop(user_id, None)
            self._stamps.pop(user_id, None)
            self._stages.pop(user_id, None)

    def count(self, user_id: str) -> int:
        check_id(user_id, "user_id")
        with self._lock:
            user = self._users.get(user_id)
            return 0 if user is None else len(user.rows)

    # -- stamps and rebuilds (see hmem.protocols.VectorIndex) --------------------------

    def stamp(self, user_id: str) -> IndexStamp | None:
        check_id(user_id, "user_id")
        with self._lock:
            user = self._users.get(user_id)
            if user_id in self._stamps:
                return self._stamps[user_id]
            return IndexStamp(None, user.dim) if user is not None and user.rows else None

    def set_stamp(self, user_id: str, stamp: IndexStamp) -> None:
        check_id(user_id, "user_id")
        check_stamp(stamp)
        with self._lock:
            user = self._users.get(user_id)
            have = self._stamps.get(user_id)
            if have is not None and have != stamp:
                raise ConfigError(f"the vectors of user {user_id!r} are stamped {have}; they cannot take {stamp}")
            if user is not None and user.rows and user.dim != stamp.dimension:
                raise InvalidInput(f"the user's vectors have dimension {user.dim}, the stamp {stamp.dimension}",
                                   field="stamp")
            self._stamps[user_id] = stamp

    def users(self) -> list[str]:
        with self._lock:
            return sorted({u for u, v in self._users.items() if v.rows} | set(self._stamps))

    def staged(self, user_id: str, stamp: IndexStamp) -> _Stage:
        check_id(user_id, "user_id")
        check_stamp(stamp)
        with self._lock:
            stage = self._stages.get(user_id)
            if stage is None or stage.stamp != stamp:
                stage = self._stages[user_id] = _Stage(self, user_id, stamp)
            return stage
