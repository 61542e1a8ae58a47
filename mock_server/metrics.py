"""`GET /metrics`: what the mock server did, in the Prometheus text format.

A load test can watch the mock the way it watches its own services. Served, for every server:

- `dshkit_mock_requests_total{surface}`: requests as they arrive (model calls and the shared
  endpoints; `/metrics` itself is not counted);
- `dshkit_mock_responses_total{surface, status, behavior, outcome}`: finished exchanges, by HTTP
  status (`none` when the connection ended before any header), `behavior` (the fault played,
  by its catalogue name, or `reply`, `raw`, `chunks`, `default`, `rejected`, the 418 routing
  kinds, `models`, `balance`, `not_found`) and outcome (`completed`, `reset`, `client_closed`…);
- `dshkit_mock_steps_served_total{script}`: scripted steps that answered, per script name;
- `dshkit_mock_bytes_written_total{surface}`: response body bytes written;
- `dshkit_mock_time_to_first_byte_seconds{surface}` and
  `dshkit_mock_stream_duration_seconds{surface}` (histograms): from a request's arrival to its
  first and to its last body write;
- `dshkit_mock_journal_entries`, `dshkit_mock_journal_kept_bytes` (gauges) and
  `dshkit_mock_journal_trimmed_total`: the journal's size (see its byte budget).

The handlers count into plain dicts (a few increments per request, no import at start-up);
`prometheus_client` builds the families and writes the text format when `/metrics` is scraped
(imported then, so `dshkit serve` is ready no later for it). With `dshkit serve --workers N`,
the worker that is scraped asks the state owner, which gathers every worker's counts and adds
them up (aggregation, not prometheus_client's multiprocess mode: the counts are a few small
dicts, and no files are shared); the journal figures are the sum of the workers' journals.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dshkit.mock_server.journal import JournalEntry

__all__ = ["DURATION_BUCKETS", "TTFB_BUCKETS", "Metrics", "add_counts", "render_counts"]

#: Upper bounds, in seconds, of the time-to-first-byte histogram.
TTFB_BUCKETS: tuple[float, ...] = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                                   2.5, 5.0, 10.0)
#: Upper bounds, in seconds, of the stream-duration histogram.
DURATION_BUCKETS: tuple[float, ...] = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                                       5.0, 10.0, 30.0, 60.0, 300.0)


#: The text of each HTTP status seen, as the `status` label spells it.
_STATUS_TEXT: dict[int, str] = {}


class _Histogram:
    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last: above every bound (+Inf)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value


class Metrics:
    """One server's counts (see the module docstring); `counts()` is their JSON form."""

    def __init__(self, journal_stats: Callable[[], Mapping[str, Any]]) -> None:
        self._journal_stats = journal_stats
        self.requests: Counter[str] = Counter()
        self.responses: Counter[tuple[str, str, str, str]] = Counter()
        self.steps: Counter[str] = Counter()
        self.bytes: Counter[str] = Counter()
        self.ttfb: dict[str, _Histogram] = {}
        self.duration: dict[str, _Histogram] = {}
        self._hists: dict[str, tuple[_Histogram, _Histogram]] = {}
        """Each surface's (ttfb, duration) pair, looked up once per request."""

    def arrived(self, surface: str) -> None:
        self.requests[surface] += 1

    def step(self, script: str) -> None:
        self.steps[script] += 1

    def finished(self, surface: str, entry: JournalEntry) -> None:
        """Count a finished exchange (its journal entry, trimmed or not).

        Runs once per request: the status's text and each surface's histograms are looked up
        in small dicts rather than made again, and an untrimmed entry's one write (a whole
        response) is read without a generator.
        """
        status = entry.status
        if status is None:
            text = "none"
        else:
            text = _STATUS_TEXT.get(status) or _STATUS_TEXT.setdefault(status, str(status))
        self.responses[(surface, text, entry.behavior or "none", entry.outcome or "none")] += 1
        if entry.trimmed:
            sent, first, last = entry.bytes_sent, entry.first_write_t, entry.last_write_t
        else:
            writes = entry.writes
            if not writes:
                return
            if len(writes) == 1:
                w = writes[0]
                sent, first, last = len(w.data), w.t, w.t
            else:
                sent, first, last = sum(len(w.data) for w in writes), writes[0].t, writes[-1].t
        if sent:
            self.bytes[surface] += sent
        if first is not None and last is not None:
            hists = self._hists.get(surface)
            if hists is None:
                hists = self._hists[surface] = (
                    self.ttfb.setdefault(surface, _Histogram(TTFB_BUCKETS)),
                    self.duration.setdefault(surface, _Histogram(DURATION_BUCKETS)),
                )
            t = entry.t
            hists[0].observe(first - t if first > t else 0.0)
            hists[1].observe(last - t if last > t else 0.0)

    def counts(self) -> dict[str, Any]:
        """Every count as JSON-ready data (what workers send the state owner to add up)."""
        journal = self._journal_stats()

        def hists(hs: dict[str, _Histogram]) -> dict[str, Any]:
            return {k: {"counts": list(h.counts), "sum": h.sum} for k, h in hs.items()}

        return {
            "requests": dict(self.requests),
            "responses": [[*k, n] for k, n in self.responses.items()],
            "steps": dict(self.steps),
            "bytes": dict(self.bytes),
            "ttfb": hists(self.ttfb),
            "duration": hists(self.duration),
            "journal": {k: journal.get(k) or 0 for k in ("entries", "kept_bytes", "trimmed")},
        }


def add_counts(many: list[dict[str, Any]]) -> dict[str, Any]:
    """The counts of several servers (the workers of one), added up."""
    out: dict[str, Any] = {"requests": Counter(), "responses": Counter(), "steps": Counter(), "bytes": Counter(),
                           "ttfb": {}, "duration": {}, "journal": Counter()}
    for c in many:
        for key in ("requests", "steps", "bytes", "journal"):
            out[key].update(c[key])
        for *labels, n in c["responses"]:
            out["responses"][tuple(labels)] += n
        for key in ("ttfb", "duration"):
            for surface, h in c[key].items():
                acc = out[key].setdefault(surface, {"counts": [0] * len(h["counts"]), "sum": 0.0})
                acc["counts"] = [a + b for a, b in zip(acc["counts"], h["counts"], strict=True)]
                acc["sum"] += h["sum"]
    out["responses"] = [[*k, n] for k, n in out["responses"].items()]
    return {k: dict(v) if isinstance(v, Counter) else v for k, v in out.items()}


def render_counts(counts: dict[str, Any]) -> tuple[bytes, str]:
    """The Prometheus text exposition of `counts`, and its content type (through
    prometheus_client's custom-collector families and its `generate_latest`)."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.core import (
        CounterMetricFamily,
        GaugeMetricFamily,
        HistogramMetricFamily,
        Metric,
    )
    from prometheus_client.exposition import CONTENT_TYPE_LATEST

    def families() -> Iterator[Metric]:
        requests = CounterMetricFamily("dshkit_mock_requests", "Requests received, by surface.", labels=["surface"])
        for surface, n in sorted(counts["requests"].items()):
            requests.add_metric([surface], n)
        yield requests
        responses = CounterMetricFamily(
            "dshkit_mock_responses", "Finished exchanges, by surface, HTTP status, behaviour (fault name, "
            "reply, raw, chunks, default, rejected, ...) and outcome.",
            labels=["surface", "status", "behavior", "outcome"])
        for *labels, n in sorted(counts["responses"]):
            responses.add_metric(labels, n)
        yield responses
        steps = CounterMetricFamily("dshkit_mock_steps_served", "Scripted steps that answered, per script.",
                                    labels=["script"])
        for script, n in sorted(counts["steps"].items()):
            steps.add_metric([script], n)
        yield steps
        written = CounterMetricFamily("dshkit_mock_bytes_written", "Response body bytes written, by surface.",
                                      labels=["surface"])
        for surface, n in sorted(counts["bytes"].items()):
            written.add_metric([surface], n)
        yield written
        for key, name, text, bounds in (
            ("ttfb", "dshkit_mock_time_to_first_byte_seconds", "From a request's arrival to its first body write.",
             TTFB_BUCKETS),
            ("duration", "dshkit_mock_stream_duration_seconds", "From a request's arrival to its last body write.",
             DURATION_BUCKETS),
        ):
            family = HistogramMetricFamily(name, text, labels=["surface"])
            for surface, h in sorted(counts[key].items()):
                cumulative, running = [], 0
                for bound, n in zip((*(repr(b) for b in bounds), "+Inf"), h["counts"], strict=True):
                    running += n
                    cumulative.append((bound, running))
                family.add_metric([surface], cumulative, h["sum"])
            yield family
        journal = counts["journal"]
        yield GaugeMetricFamily("dshkit_mock_journal_entries", "Exchanges in the journal.",
                                value=journal.get("entries", 0))
        yield GaugeMetricFamily("dshkit_mock_journal_kept_bytes",
                                "Bytes the journal's untrimmed exchanges hold (its byte budget's measure).",
                                value=journal.get("kept_bytes", 0))
        yield CounterMetricFamily("dshkit_mock_journal_trimmed", "Exchanges the journal trimmed to counts.",
                                  value=journal.get("trimmed", 0))

    class _Collector:
        def collect(self) -> Iterator[Metric]:
            return families()

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector())
    return generate_latest(registry), CONTENT_TYPE_LATEST
