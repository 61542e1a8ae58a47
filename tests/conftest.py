"""Fixtures shared by the whole suite: the hypothesis profiles and the corpus locations.

The corpus (`../shared/corpus/`) is real data written by others; tests read it in place and skip
with a clear reason when it is absent (as on a user's machine). It is never copied here.
"""

from __future__ import annotations

import gc
import os
import ssl
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# `pytester` runs a user's pytest session inside this process (tests/mock_server/test_record_mode.py).
pytest_plugins = ["pytester"]

_DSHKIT_IMPORTED = False


def _import_all_of_dshkit() -> None:
    """Import every dshkit module once, before the first in-process pytester session.

    Such a session takes a snapshot of `sys.modules` and, when it ends, removes every module
    imported during it. A dshkit module first imported inside the session would then be imported
    a second time by a later test, a copy with classes of its own: the conformance runner of one
    copy no longer recognises the `Finish` chunks or the transport errors of the other (seen as
    "the stream ended without a finish chunk" / "raised ReadError", depending on which tests
    shared a worker). Imported beforehand, the modules are in the snapshot and stay one copy."""
    global _DSHKIT_IMPORTED
    if _DSHKIT_IMPORTED:
        return
    _DSHKIT_IMPORTED = True
    import importlib
    import pkgutil

    import dshkit

    for info in pkgutil.walk_packages(dshkit.__path__, prefix="dshkit."):
        # The client drivers import client libraries `make test` does not install; `__main__`
        # modules run their command.
        if ".clients." in info.name or info.name.endswith("__main__") or ".recordings." in info.name:
            continue
        importlib.import_module(info.name)
    # What is imported only on first use: httpx's transport and its event-loop backend (a copy
    # of httpcore made inside a session raises errors httpx no longer maps), and the official
    # SDKs the SDK adapters load lazily, with their own HTTP stacks.
    import importlib.util

    for name in ("httpcore", "h11", "anyio", "anyio._backends._asyncio", "sniffio", "certifi",
                 "openai", "anthropic", "httpx2", "httpcore2"):
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name)
    # The openai SDK loads `client.chat.completions` (its resource, streaming and pagination
    # modules) on first use: imported inside a session, they were dropped after it and imported
    # again by every user test run of the suite (about 25 ms each, 60-odd runs in record mode).
    if "openai" in sys.modules:
        for name in ("openai.resources.chat.chat", "openai.resources.chat.completions.messages"):
            importlib.import_module(name)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if "pytester" in getattr(item, "fixturenames", ()):
        _import_all_of_dshkit()


def _read_ca_certificates_lazily() -> None:
    """Point httpx at a CA *directory* instead of a CA *file*, for this process and the ones it starts.

    Every test talks plain HTTP to 127.0.0.1, yet each `httpx.AsyncClient` (one per adapter; the
    conformance catalogue runs make thousands) builds a verifying TLS context up front, and
    loading a CA bundle file (`$SSL_CERT_FILE`, else certifi's) costs 60-130 ms of CPU each time,
    on the event loop: that was more than half of the whole suite's time. A CA directory is read
    only when a certificate is actually checked, which no test does. Verification stays on.

    `$SSL_CERT_FILE` is set empty rather than removed: OpenSSL then loads no bundle into the
    contexts `ssl.create_default_context()` makes (aiohttp makes two when it is imported, about
    60 ms in every process that imports it: each `dshkit serve`, `record`, `conformance` the
    tests start), while httpx, which takes an empty value for none, reads the directory."""
    capath = os.environ.get("SSL_CERT_DIR") or ssl.get_default_verify_paths().capath
    if capath and Path(capath).is_dir():
        os.environ["SSL_CERT_FILE"] = ""
        os.environ["SSL_CERT_DIR"] = capath


_read_ca_certificates_lazily()

settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", deadline=None, max_examples=200)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("DSHKIT_SHARED", REPO.parent / "shared"))
REAL_CORPUS = SHARED / "corpus" / "real"
DSH_SESSIONS = SHARED / "corpus" / "dsh-sessions"
DSH_UPSTREAM = SHARED / "corpus" / "dsh-sessions-upstream"


def upstream_folders() -> list[Path]:
    """Every scenario folder of `shared/corpus/dsh-sessions-upstream` (one holding a session log
    or an override sidecar), or none when the corpus is absent; for parametrizing at collection."""
    if not DSH_UPSTREAM.is_dir():
        return []
    return sorted({p.parent for p in DSH_UPSTREAM.rglob("*") if p.is_file() and p.name != "README.md"})


def corpus_missing(path: Path) -> str:
    """The one skip reason of every test that needs a corpus file or folder that is absent: where
    it was looked for, and what to set."""
    return (f"corpus not found at {path}: set DSHKIT_SHARED=/path/to/shared (the folder holding "
            "corpus/) to run")


def need_corpus(path: Path) -> Path:
    """`path` (a corpus file or folder), or skip the test with `corpus_missing`."""
    if not path.exists():
        pytest.skip(corpus_missing(path))
    return path


def corpus_absent_param(path: Path) -> Any:
    """The single skipped parameter of a test parametrized over corpus files when `path` is absent."""
    return pytest.param(None, marks=pytest.mark.skip(reason=corpus_missing(path)), id="corpus-absent")


def _corpus(path: Path) -> Path:
    return need_corpus(path)


@pytest.fixture
def real_corpus() -> Path:
    """`shared/corpus/real`: recorded provider streams with `*.expected.json`."""
    return _corpus(REAL_CORPUS)


@pytest.fixture
def dsh_sessions() -> Path:
    """`shared/corpus/dsh-sessions`: session logs written by upstream DSH."""
    return _corpus(DSH_SESSIONS)


@pytest.fixture(scope="session")
def plain_serve_process() -> Iterator[Any]:
    """One `dshkit serve` started with no option (no script, the admin API on) per worker, for the
    tests that need nothing else of it (they carry `SHARES_PLAIN_SERVE`); use `plain_serve`."""
    from tests.mock_server.cli_process import ServeProcess

    proc = ServeProcess()
    try:
        yield proc
    finally:
        proc.kill()


@pytest.fixture
def plain_serve(plain_serve_process: Any) -> Any:
    """The worker's plain `dshkit serve`, as a new one would be: its scripts dropped (`DELETE
    /_dshkit/scripts`: requests get the default reply, as on a server started without any), every
    session and the journal forgotten (`POST /_dshkit/reset`)."""
    import httpx

    base = plain_serve_process.base_url
    assert httpx.delete(base + "/_dshkit/scripts", timeout=10).status_code == 200
    assert httpx.post(base + "/_dshkit/reset", timeout=10).status_code == 200
    return plain_serve_process


FULL_COLLECTION_THRESHOLD = 100
"""The collector's third threshold in a test process (CPython's default is 10): how many
collections of the middle generation come before a full one is considered. A full collection
walks every object the process holds, and a worker holds a great many (two SDKs' types, pydantic
models, every collected test): 0.1-0.25 s of CPU each. With the default, the workers of
`pytest -n 2 tests/mock_server` (with the recording tests, then in tests/record) made 23 full collections (5.3 s); with this
threshold and the collection-time heap frozen (below), 6 (0.65 s). The young generations still
collect each test's short-lived cycles as often as before."""


def pytest_configure(config: pytest.Config) -> None:
    # pytest-xdist registers this marker itself; declared here too so `-p no:xdist` runs still collect.
    config.addinivalue_line("markers", "xdist_group(name): run on the same xdist worker under --dist loadgroup")
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_THRESHOLD)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection built (the imported modules, the collected tests) lives until the session
    ends: collected once now and frozen (`gc.freeze`), it is left out of every later collection's
    walk. The garbage of the tests themselves is collected as before."""
    gc.collect()
    gc.freeze()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep `--dist loadgroup` (as `make test` runs) sending each `xdist_group` to one worker.

    pytest-xdist marks a grouped test by appending `@group` to its node id on the worker, and its
    scheduler reads the groups back from those ids. xdist 3.8 writes the id to `item._nodeid`,
    which pytest 9.2 no longer reads (the id now comes from `item._id`), so every group was
    silently spread over all workers and each worker paid for the whole group's shared work (the
    catalogue runs, the conformance plugin's pytest runs). Where xdist's suffix did not take,
    it is applied here the way this pytest stores ids; where it did, nothing changes."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")})
        if not names or "@" in item.nodeid:
            continue
        grouped = f"{item.nodeid}@{'_'.join(names)}"
        if hasattr(item, "_id"):
            from _pytest.nodeid import coerce_node_id

            item._id = coerce_node_id(grouped)
        else:
            item._nodeid = grouped
