"""Script loading through libyaml against the pure-Python YAML loader, measured in one run.

A script file of 2,000 steps (replies with reasoning, tool calls with arguments, matchers,
stream settings and faults, about the mix a recorded session converts to) is loaded with
`load_scripts`, the code `dshkit serve --script` and `MockServer(path)` run: first with libyaml
(`yaml.CSafeLoader`, the default when PyYAML was built with it), then with the pure-Python
`SafeLoader` it falls back to. Each is the best of a few runs; both include pydantic's
validation, which does not change. The last line is one JSON object with both times and
`pure_vs_libyaml`, how many times longer the pure-Python loader takes (and `parse_only_ratio`,
the same for the YAML parse alone). Run: `python bench/script_load.py` (a few seconds).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dshkit.mock_server import locate as scripts_module  # where the YAML loader is chosen
from dshkit.mock_server.scripts import load_scripts

STEPS = 2_000
RUNS = 3


def _text() -> str:
    lines = ["name: bench", "steps:"]
    for i in range(STEPS):
        if i % 10 == 9:
            lines += ["  - fault: rate_limit", "    retry_after: 0.5"]
            continue
        lines += [
            f"  - label: step-{i}",
            "    match:",
            f"      user: 'turn {i}'",
            "    reply:",
            "      reasoning: |",
            f"        Turn {i}: read the notes, then answer in a few words.",
            "        The notes say what the forge does.",
            f"      content: 'The forge turns YAML recipes into widgets ({i}).'",
            "      tool_calls:",
            "        - name: read",
            f"          arguments: {{file_path: NOTES.md, offset: {i}, limit: 40}}",
            "    stream:",
            "      split: {mode: fixed, size: 16}",
            "      writes: {events_per_write: 2}",
        ]
    return "\n".join(lines) + "\n"


def _best(fn: object) -> float:
    best = float("inf")
    for _ in range(RUNS):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    fast = getattr(yaml, "CSafeLoader", None)
    if fast is None:
        print(json.dumps({"bench": "script_load", "skipped": "PyYAML built without libyaml"}))
        return
    text = _text()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.yaml"
        path.write_text(text, encoding="utf-8")
        times = {}
        for name, loader in (("libyaml", fast), ("pure", None)):
            scripts_module._FAST_LOADER = loader
            times[name] = _best(lambda: load_scripts(path))
        scripts_module._FAST_LOADER = fast
    parse_fast = _best(lambda: yaml.load(text, Loader=fast))
    parse_pure = _best(lambda: yaml.load(text, Loader=yaml.SafeLoader))
    print(f"{STEPS} steps, {len(text) / 1e6:.2f} MB: libyaml {times['libyaml'] * 1e3:.0f} ms, "
          f"pure-Python {times['pure'] * 1e3:.0f} ms (parse alone: {parse_fast * 1e3:.0f} vs "
          f"{parse_pure * 1e3:.0f} ms)")
    print(json.dumps({
        "bench": "script_load",
        "steps": STEPS,
        "libyaml_s": round(times["libyaml"], 4),
        "pure_s": round(times["pure"], 4),
        "pure_vs_libyaml": round(times["pure"] / times["libyaml"], 2),
        "parse_only_ratio": round(parse_pure / parse_fast, 2),
    }))


if __name__ == "__main__":
    main()
