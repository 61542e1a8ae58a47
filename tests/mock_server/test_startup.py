"""How a process that only serves starts (`serving`): the collector off until the server has
started and back on however the command ends, and nothing of the kind for a host program that
runs the command inside itself."""

from __future__ import annotations

import gc
import ssl
from collections.abc import Iterator

import pytest

from dshkit.mock_server.startup import owns_process, serving


@pytest.fixture
def collector() -> Iterator[None]:
    """The collector as the test found it, whatever the test did to it."""
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def test_a_host_program_keeps_its_collector(collector: None) -> None:
    gc.enable()
    with serving(own_process=False):
        assert gc.isenabled() and not owns_process()
    gc.disable()
    with serving(own_process=False):
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_a_serving_process_collects_nothing_until_it_settles_and_is_restored_whichever_way_it_ends(
    collector: None,
) -> None:
    verify_paths = ssl.SSLContext.set_default_verify_paths
    gc.enable()
    with pytest.raises(SystemExit), serving(own_process=True):
        assert not gc.isenabled() and owns_process()
        raise SystemExit(2)  # bad options, `--help`
    assert gc.isenabled() and not owns_process()
    assert ssl.SSLContext.set_default_verify_paths is verify_paths  # aiohttp was imported already: untouched
    gc.disable()  # a collector that was off stays off
    with serving(own_process=True):
        assert owns_process()
    assert not gc.isenabled() and not owns_process()
