"""Token cost of LLM extraction: the sample conversations (data/conversations) replayed
through ``Memory.add`` (one add per session, as ``hmem demo`` does) with an LLM configured
against ``hmem.testing.ScriptedLLMServer``.

What is real and what is scripted: the prompts are hmem's real extraction prompts (system
instructions + current profile + the user turn for the profile; the session transcript for
facts), and their size is counted with the o200k tokenizer (gpt-4o-mini) on the server
side, from the request as sent. The replies are a fixed small valid JSON, so the
completion tokens are only a floor: a real model's reply grows with what it finds.
Compaction is off (no summary calls) and embeddings come from the scripted server (fake
vectors), so only extraction calls are counted. The numbers come from ``AddResult``
(``result.profile.usage`` / ``result.fact_report.usage``), i.e. what a caller sees per add.

Run:  .venv/bin/python bench/bench_extraction_tokens.py
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from typing import Any

from hmem.cli.samples import session_messages
from hmem.config import Settings
from hmem.eval.sample import load_sample
from hmem.memory import Memory
from hmem.testing.llm_server import RecordedRequest, ScriptedLLMServer, ScriptedReply
from hmem.tokens import get_tokenizer

PROFILE_REPLY = json.dumps({"updates": [{"key": "likes", "value": ["tea"], "confidence": 0.8,
                                         "evidence": "I like tea"}]})
FACTS_REPLY = json.dumps({"facts": [{"kind": "fact", "text": "The user likes tea.", "importance": 0.5}]})


def main() -> None:
    tok = get_tokenizer("gpt-4o-mini")

    def answer(request: RecordedRequest) -> ScriptedReply:
        profile = "user's profile" in str(request.body["messages"][0]["content"])
        reply = PROFILE_REPLY if profile else FACTS_REPLY
        return ScriptedReply("text", reply, prompt_tokens=tok.count_messages(request.body["messages"]),
                             completion_tokens=tok.count(reply))

    dataset = load_sample()
    per_add: list[dict[str, Any]] = []
    with ScriptedLLMServer() as server, tempfile.TemporaryDirectory() as folder:
        server.respond_with(answer)
        settings = Settings.from_env(
            {}, data_dir=folder, vectors="memory", compaction="off", llm_base_url=server.base_url,
            llm_api_key="k", llm_model="gpt-4o-mini", embed_provider="openai", embed_model="fake",
            embed_base_url=server.base_url, embed_api_key="k",
        )
        mem = Memory.from_settings(settings)
        started = time.perf_counter()
        try:
            for conv in dataset.conversations:
                for session in conv.sessions:
                    batch = session_messages(session)
                    result = mem.add(conv.id, session.id, batch)
                    assert result.profile is not None and result.profile.method == "llm"
                    assert result.fact_report is not None and result.fact_report.method == "llm"
                    facts_usage = result.fact_report.usage
                    per_add.append({
                        "user_turns": sum(1 for m in batch if m.role == "user" and m.content),
                        "turns": len(batch),
                        "profile": result.profile.usage, "facts": facts_usage,
                    })
        finally:
            mem.close()
        calls = len(server.completion_requests)
    elapsed = time.perf_counter() - started
    adds = len(per_add)
    turns = sum(a["turns"] for a in per_add)
    user_turns = sum(a["user_turns"] for a in per_add)
    print(f"{len(dataset.conversations)} sample conversations, {adds} adds (one per session), {turns} turns "
          f"({user_turns} user turns), {calls} LLM calls, {elapsed:.1f} s")
    print(f"\n{'':22}{'prompt':>10}{'completion':>12}   (completion: scripted reply, a floor)")
    for part in ("profile", "facts"):
        p = sum(a[part].prompt_tokens for a in per_add)
        c = sum(a[part].completion_tokens for a in per_add)
        print(f"{part + ' per user turn':22}{p / user_turns:>10.1f}{c / user_turns:>12.1f}")
        print(f"{part + ' per add':22}{p / adds:>10.1f}{c / adds:>12.1f}")
    total_p = sum(a["profile"].prompt_tokens + a["facts"].prompt_tokens for a in per_add)
    total_c = sum(a["profile"].completion_tokens + a["facts"].completion_tokens for a in per_add)
    print(f"{'both per user turn':22}{total_p / user_turns:>10.1f}{total_c / user_turns:>12.1f}")
    print(f"{'both per turn':22}{total_p / turns:>10.1f}{total_c / turns:>12.1f}")
    print(f"{'both per add':22}{total_p / adds:>10.1f}{total_c / adds:>12.1f}")
    per_add_prompt = [a["profile"].prompt_tokens + a["facts"].prompt_tokens for a in per_add]
    print(f"\nprompt tokens per add: median {statistics.median(per_add_prompt):.0f}, "
          f"max {max(per_add_prompt)}; total {total_p:,} prompt + {total_c:,} completion")


if __name__ == "__main__":
    main()
