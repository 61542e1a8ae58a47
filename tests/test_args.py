"""`dshkit.args`, the argparse value types the subcommands share: each returns the value it
accepts and refuses anything else with an `ArgumentTypeError` whose sentence names the value and
what is allowed (argparse turns it into a usage error, exit 2). That every command uses them is
`test_cli_values.py`'s."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dshkit import args

ACCEPTED: list[tuple[Callable[[str], Any], str, Any]] = [
    (args.positive_int, "1", 1),
    (args.positive_int, " 12 ", 12),
    (args.positive_float, "0.5", 0.5),
    (args.positive_float, "1e-3", 0.001),
    (args.non_negative_int, "0", 0),
    (args.port_number, "0", 0),
    (args.port_number, "65535", 65535),
    (args.byte_limit, "1", 1),
    (args.backlog, "2147483647", 2**31 - 1),
    (args.http_url, "http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
    (args.http_url, "https://api.deepseek.com", "https://api.deepseek.com"),
    (args.non_empty, " m ", " m "),
]

REFUSED: list[tuple[Callable[[str], Any], str, str]] = [
    (args.positive_int, "0", "must be at least 1, got 0"),
    (args.positive_int, "two", "expected a whole number >= 1, got 'two'"),
    (args.positive_float, "0", "above 0"),
    (args.positive_float, "nan", "above 0, got nan"),
    (args.positive_float, "inf", "finite"),
    (args.positive_float, "soon", "expected a number of seconds > 0, got 'soon'"),
    (args.non_negative_int, "-1", "must be 0 or more, got -1"),
    (args.non_negative_int, "1.5", "expected a whole number >= 0, got '1.5'"),
    (args.port_number, "65536", "port 65536 is out of range; use 0-65535"),
    (args.port_number, "-1", "out of range"),
    (args.byte_limit, "0", "must be at least 1 byte, got 0"),
    (args.backlog, "0", "0 is out of range; use 1-2147483647"),
    (args.backlog, "2147483648", "out of range"),
    (args.http_url, "localhost:8000", "not an http(s) URL; write it with its scheme, e.g. http://localhost:8000"),
    (args.http_url, "ftp://host/x", "not an http(s) URL"),
    (args.http_url, "http://", "not an http(s) URL"),
    (args.http_url, "http://host:99999", "is not a valid URL"),
    (args.http_url, "http://host:0", "names port 0, which no server listens on"),
    (args.non_empty, "  ", "must not be empty, got '  '"),
]


@pytest.mark.parametrize(("kind", "text", "value"), ACCEPTED, ids=[f"{k.__name__}-{t}" for k, t, _ in ACCEPTED])
def test_accepted_values(kind: Callable[[str], Any], text: str, value: Any) -> None:
    assert kind(text) == value


@pytest.mark.parametrize(("kind", "text", "words"), REFUSED, ids=[f"{k.__name__}-{t}" for k, t, _ in REFUSED])
def test_refused_values_say_why(kind: Callable[[str], Any], text: str, words: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as info:
        kind(text)
    assert words in str(info.value)


def test_an_output_file_is_refused_only_when_it_cannot_be_written(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("x")
    for fine in (tmp_path / "new.json", tmp_path / "missing" / "deeper" / "out.json", tmp_path / "plain"):
        assert args.output_file(str(fine)) == str(fine)  # missing folders are the writer's to make
    refusals = {"": "must be a file path", str(tmp_path): "is a directory",
                str(tmp_path / "plain" / "out.json"): "is a file, not a directory"}
    for text, words in refusals.items():
        with pytest.raises(argparse.ArgumentTypeError, match=words):
            args.output_file(text)


def test_a_refusal_is_a_usage_error_naming_the_option() -> None:
    parser = argparse.ArgumentParser(prog="dshkit run", exit_on_error=False)
    parser.add_argument("--steps", type=args.positive_int)
    with pytest.raises(argparse.ArgumentError, match="argument --steps: must be at least 1, got 0"):
        parser.parse_args(["--steps", "0"])
