"""The ``speaker`` ranking stage end to end: the embedded default (SQLite, embedded Chroma,
the packaged multilingual-e5 model, sentence keys) through ``Memory.add`` and
``Memory.recall``. Asked about themselves, a user finds their own short statement above the
assistant's long replies that echo it; asked about what the assistant said, the replies
keep their place; ``speaker_weight=0`` turns the stage off."""

from __future__ import annotations

from pathlib import Path

import pytest

from hmem.errors import ConfigError
from hmem.memory import Memory
from hmem.types import Hit

pytestmark = pytest.mark.slow

SAID = "ok the beans I use are from Grindstone Roasters in Kirkstall, a medium roast ethiopian"
ECHOES = [
    "Buying your coffee beans from a local roaster like Grindstone Roasters is a great choice for espresso. "
    "Ethiopian beans from a "
    "medium roast are bright and floral, so grind finer than you would for a darker roast. Rest the beans "
    "five to ten days after the roast date printed on the bag, and keep the beans in an airtight container.",
    "Medium roast Ethiopian beans lose their aroma within a month, so keep an eye on the roast date printed "
    "on the Grindstone bag and grind the beans just before brewing.",
]


def _fill(mem: Memory) -> None:
    mem.add("ana", "s1", [{"role": "user", "content": SAID}, {"role": "assistant", "content": ECHOES[0]}])
    mem.add("ana", "s2", [{"role": "user", "content": "any tips for keeping coffee fresh?"},
                          {"role": "assistant", "content": ECHOES[1]}])
    mem.add("ana", "s3", [{"role": "user", "content": "the train to Leeds was late again"},
                          {"role": "assistant", "content": "Sorry to hear that, delays on that line are common."}])
    mem.flush()


def _roles(hits: list[Hit]) -> list[str]:
    return [str(h.item.metadata["role"]) for h in hits]


def test_asked_about_themselves_a_user_finds_their_own_line_above_the_echoes(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "on") as mem:
        _fill(mem)
        hits = mem.recall("ana", "Which roaster did I buy my coffee beans from?", 3)
        assert hits[0].item.text == SAID
        assert [h.boosts.get("speaker") for h in hits if h.item.metadata["role"] == "assistant"] == \
            [pytest.approx(0.7)] * _roles(hits).count("assistant")
        # Addressed to the assistant, the question asks for its words: nothing scored down.
        asked = mem.recall("ana", "How long did you say to rest the beans after roasting?", 3)
        assert asked[0].item.metadata["role"] == "assistant"
        assert all("speaker" not in h.boosts for h in asked)


def test_with_the_stage_off_the_echo_outranks_the_statement(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "off", speaker_weight=0) as mem:
        _fill(mem)
        hits = mem.recall("ana", "Which roaster did I buy my coffee beans from?", 3)
        assert hits[0].item.metadata["role"] == "assistant"
        assert all("speaker" not in h.boosts for h in hits)


@pytest.mark.parametrize("bad", [1.5, -0.2, "much"])
def test_a_bad_weight_is_refused_before_the_folder_is_touched(tmp_path: Path, bad: object) -> None:
    # Tried: above 1, below 0, not a number.
    with pytest.raises(ConfigError, match="speaker_weight"):
        Memory.open(tmp_path / "bad", speaker_weight=bad)
    assert not (tmp_path / "bad").exists()
