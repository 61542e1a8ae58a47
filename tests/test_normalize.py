"""The shared snapshot normaliser: the same id gets the same token, distinct ids distinct ones."""

from __future__ import annotations

from tests.normalize import Normalizer


def test_by_key_tokens_ids_and_times_under_their_keys_only() -> None:
    doc = {"id": "a", "items": [{"toolCallId": "b"}, {"callId": "a"}], "created": 17, "text": "id a", "id2": "a", "n": 3}
    assert Normalizer.by_key()(doc) == {"id": "<id-1>", "items": [{"toolCallId": "<id-2>"}, {"callId": "<id-1>"}],
                                        "created": "<time-1>", "text": "id a", "id2": "a", "n": 3}


def test_in_text_tokens_ids_inside_strings_and_hides_the_workspace() -> None:
    call = "call_00_abcdefghijklmnopqrstuvwx"
    uuid = "0cd1282e-a9cf-4e5f-85a1-069a1669f0ce"
    doc = {"out": f"/ws/x ran {call} then {uuid}", "again": call, "requestId": "r-9", "time": 1786782801,
           "fp": "a26a7955944dc5c60445bff77fac9c8e", "pair": ("/ws", 2)}
    assert Normalizer.in_text("/ws")(doc) == {
        "out": "{{cwd}}/x ran {{call:1}} then {{uuid:1}}", "again": "{{call:1}}", "requestId": "{{request:1}}",
        "time": 0, "fp": "{{hex:1}}", "pair": ["{{cwd}}", 2]}
