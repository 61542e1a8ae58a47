"""`client_protocol`: the stdio protocol's lines and the task each catalogue scenario becomes."""

from __future__ import annotations

import json

import pytest

from dshkit.conformance.client_protocol import (
    ProtocolViolation,
    build_task,
    parse_line,
    validate_task,
)

from .catalogue_runs import catalogue


def test_parse_line_locates_what_is_wrong() -> None:
    with pytest.raises(ProtocolViolation, match=r"stdout line 3 is not UTF-8"):
        parse_line(b"\xff\xfe\n", 3, expect="observation")
    with pytest.raises(ProtocolViolation, match=r"'observation' message where the protocol expects 'hello'"):
        parse_line(b'{"type": "observation"}\n', 1, expect="hello")
    with pytest.raises(ProtocolViolation, match=r"at `the line`: 'step' is a required property"):
        parse_line(json.dumps({"type": "observation"}).encode(), 2, expect="observation")


def test_every_catalogue_task_is_valid_against_the_task_schema() -> None:
    for sc in catalogue():
        for protocol in sc.protocols:
            validate_task(build_task(sc, protocol=protocol, base_url="http://127.0.0.1:1", api_key="sk-x"))


def test_every_catalogue_task_offers_each_tool_once() -> None:
    """DeepSeek's Anthropic surface (and the mock) answer 400 to a tool name defined twice, so a
    task that offered the tool its model calls twice failed every client that sends the list."""
    for sc in catalogue():
        for protocol in sc.protocols:
            names = [t["name"] for t in build_task(sc, protocol=protocol, base_url="http://127.0.0.1:1",
                                                    api_key="sk-x")["tools"]]
            assert len(names) == len(set(names)), (sc.id, names)
