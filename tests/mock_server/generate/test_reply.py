"""The reply model (`generate/reply.py`): seeded ids that are a function of their text alone,
the stream envelope of each era, and the usage invariants DeepSeek keeps (wire.md §10)."""

from __future__ import annotations

import random
import re
import threading
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dshkit.mock_server.generate.reply import compute_usage, make_meta, seeded_uuid


def check_usage(u: dict, *, reasoning: bool) -> None:
    assert u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"]
    assert u["prompt_cache_hit_tokens"] + u["prompt_cache_miss_tokens"] == u["prompt_tokens"]
    assert u["prompt_tokens_details"]["cached_tokens"] == u["prompt_cache_hit_tokens"]
    assert u["prompt_cache_hit_tokens"] % 64 == 0
    assert ("completion_tokens_details" in u) is reasoning
    if reasoning:
        assert u["completion_tokens_details"]["reasoning_tokens"] <= u["completion_tokens"]


def _reference_uuid(text: str) -> str:
    return str(uuid.UUID(int=random.Random(text).getrandbits(128), version=4))


_UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


@given(text=st.one_of(st.builds("meta:{}:repeat:{}".format, st.integers(0, 2**32), st.integers(1, 2**40)),
                      st.text()))
def test_seeded_uuid_is_a_uuid4_fixed_by_its_text(text: str) -> None:
    """The same text gives the same id (any text: a lone surrogate too), in the UUID version 4
    form a client may parse."""
    got = seeded_uuid(text)
    assert _UUID4.fullmatch(got)
    assert uuid.UUID(got).version == 4
    assert seeded_uuid(text) == got


def test_seeded_uuid_is_the_same_in_every_process() -> None:
    """Ids are a function of the text alone, not of a process's hash salt or state: a server
    started again with the same seed sends the same ids (pinned values)."""
    assert seeded_uuid("meta:7:repeat:3") == "7af93660-1c89-46dd-aa41-13bbe2f12cf2"
    assert seeded_uuid("meta:1") == "0d7940d6-3345-4d6d-b1be-ff7672bdfa05"


def test_seeded_uuid_differs_per_text() -> None:
    """Every repeat of every seed has its own id (no two of 40,000 texts share one), and the
    first response's id, drawn the other way, is none of them."""
    texts = [f"meta:{s}:repeat:{r}" for s in range(200) for r in range(1, 201)]
    ids = {seeded_uuid(t) for t in texts}
    assert len(ids) == len(texts)
    assert not ids & {make_meta("deepseek-chat", seed=s).id for s in range(200)}


def test_seeded_uuid_holds_across_threads() -> None:
    """Ids drawn at once on several threads are each text's own (what one thread draws alone)."""
    texts = [f"meta:{s}:repeat:{r}" for s in range(4) for r in range(1, 200)]
    expected = {t: seeded_uuid(t) for t in texts}
    bad: list[str] = []
    start = threading.Barrier(4)

    def draw() -> None:
        start.wait()
        bad.extend(t for t in texts if seeded_uuid(t) != expected[t])

    threads = [threading.Thread(target=draw) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


def test_repeated_responses_get_the_seeded_ids() -> None:
    """A repeat's completion id is its own text's id, and differs from the first response's (the
    seeded generator's, which the fingerprint comes from too)."""
    first = make_meta("deepseek-chat", seed=7, created=1)
    again = make_meta("deepseek-chat", seed=7, created=1, repeat=3)
    assert first.id == _reference_uuid("meta:7")
    assert again.id == seeded_uuid("meta:7:repeat:3") != first.id
    assert again.id != make_meta("deepseek-chat", seed=7, created=1, repeat=4).id
    assert again.system_fingerprint == first.system_fingerprint


def test_v32_era_fingerprint() -> None:
    assert re.match(r"^fp_[0-9a-f]{10}_prod0820_fp8_kvcache$", make_meta("deepseek-chat", era="v3.2").system_fingerprint)
    assert re.match(r"^[0-9a-f]{32}$", make_meta("deepseek-v4-flash").system_fingerprint)


@pytest.mark.parametrize("prompt", [0, 1, 63, 64, 127, 128, 1000, 4096])
def test_usage_invariants(prompt: int) -> None:
    check_usage(compute_usage(prompt_tokens=prompt, completion_tokens=5, reasoning_tokens=3), reasoning=True)
    check_usage(compute_usage(prompt_tokens=prompt, completion_tokens=5, reasoning_tokens=0), reasoning=False)
