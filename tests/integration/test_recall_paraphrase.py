"""Fusion that knows when BM25 has nothing to say: a question whose telling words the
archive does not hold (a paraphrase) is answered by dense retrieval, not outvoted by turns
that share a common word with it; a question whose words the archive holds still lets BM25
lead. Real default embedder (multilingual-e5-small), in-process vectors."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from hmem.errors import ConfigError
from hmem.longterm import fusion as fz
from hmem.longterm.options import RecallOptions
from hmem.longterm.types import LongTermConfig
from hmem.memory import Memory
from hmem.providers.e5 import e5_problem

pytestmark = pytest.mark.skipif(e5_problem() is not None, reason=f"e5 cannot run here: {e5_problem()}")

# Each shares "live" or "now" with the question and nothing else.
CHANCE = ["I live for weekends like this one, honestly.", "Right now I am cooking a huge pot of chili.",
          "We watched the band play live at the park now that it's summer.", "Now the printer at work is broken again.",
          "I could live on noodles and tea if nobody stopped me.", "The live stream of the match kept freezing just now.",
          "My manager wants the report now, not tomorrow.", "Do you think plants live longer with music?",
          "I now run three times a week before work.", "They live-tweeted the entire conference, now it's trending."]
PARENTS = "My folks retired to a little cottage by the sea in Cornwall last year."
TORTOISE = "My tortoise Gerald needs his heat lamp on every morning."


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory.open(tmp_path, vectors="memory") as memory:
        memory.add("u1", "s1", [{"role": "user", "content": t} for t in [*CHANCE[:5], PARENTS, TORTOISE, *CHANCE[5:]]])
        yield memory


def test_a_paraphrase_is_found_by_meaning_not_outvoted_by_chance_words(mem: Memory) -> None:
    question = "where do my mother and father live now?"
    by_words = [h.item.text for h in mem.recall("u1", question, 3, RecallOptions(fusion="lexical"))]
    assert PARENTS not in by_words  # BM25 alone ranks the chance matches first
    hits = mem.recall("u1", question, 3)
    assert "retired to a little cottage by the sea in Cornwall" in hits[0].item.text, [h.item.text for h in hits]


def test_a_question_in_the_archives_words_still_lets_bm25_lead(mem: Memory) -> None:
    hits = mem.recall("u1", "is Gerald's heat lamp on?", 3)
    assert TORTOISE in hits[0].item.text and hits[0].lexical_rank is not None


def test_coverage_is_low_for_chance_matches_and_full_for_the_words_themselves(mem: Memory) -> None:
    # The same numbers recall reads: the user's BM25 index and its best score.
    lexical = mem._parts.longterm.lexical
    for question, low in (("where do my mother and father live now?", True), ("Gerald heat lamp", False)):
        top = lexical.search("u1", question, 1)[0].score
        stats = lexical.term_stats("u1", [question])
        coverage = fz.query_coverage(top, stats.terms[0], stats.documents)
        assert (coverage < 0.5) if low else (coverage > 0.9), (question, coverage)


def test_without_coverage_the_chance_matches_outvote_the_paraphrase(mem: Memory) -> None:
    # The mechanism, not luck: the same store with BM25 at its full min-max weight.
    store = mem._parts.longterm
    store.config = replace(store.config, lexical_coverage=False)
    texts = [h.item.text for h in mem.recall("u1", "where do my mother and father live now?", 3)]
    assert texts[0] != PARENTS, texts


def test_the_flag_refuses_what_is_not_a_bool() -> None:
    # Tried: "yes", 1, None; each a ConfigError naming the field.
    for bad in ("yes", 1, None):
        with pytest.raises(ConfigError, match="lexical_coverage must be True or False"):
            LongTermConfig(lexical_coverage=bad)  # type: ignore[arg-type]
