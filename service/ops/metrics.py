"""Prometheus metrics, in a registry of the app's own (tests create many apps).

With several workers each process counts its own requests and rays; a
scrape reaches one worker, so sum over workers (or run one worker) for
totals. The scene and triangle gauges are read from the store at scrape time.
"""

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from ..store.store import SceneStore

#: Latency buckets in seconds: picks take well under a millisecond, uploads seconds.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class _StoreCollector:
    def __init__(self, store: SceneStore, metrics: "Metrics"):
        self.store = store
        self.metrics = metrics

    def collect(self):
        rays = CounterMetricFamily("pick_rays_cast", "Rays traced (camera pixels included)")
        rays.add_metric([], self.metrics.rays_cast)
        yield rays
        scenes = GaugeMetricFamily("pick_scenes", "Scenes open in this process")
        scenes.add_metric([], len(self.store))
        yield scenes
        triangles = GaugeMetricFamily("pick_triangles", "Triangles over all open scenes, instances counted each")
        triangles.add_metric([], self.store.triangle_total())
        yield triangles
        damaged = GaugeMetricFamily("pick_damaged_scenes", "Scenes found damaged: served read-only (a damaged "
                                    "journal) or refused (a damaged checkpoint)", labels=["state"])
        for state, scenes in self.store.damaged().items():
            damaged.add_metric([state], len(scenes))
        yield damaged


class Metrics:
    """Request counts and latency by route template and status, rays cast, scenes, triangles."""

    def __init__(self, store: SceneStore):
        self.registry = CollectorRegistry()
        self.requests = Counter("pick_http_requests", "HTTP requests answered", ["method", "route", "status"],
                                registry=self.registry)
        self.latency = Histogram("pick_http_request_duration_seconds", "Time to answer an HTTP request",
                                 ["method", "route"], buckets=LATENCY_BUCKETS, registry=self.registry)
        #: A plain int, read at scrape time: a prometheus Counter takes a lock
        #: on every increment, which a one-ray pick would notice.
        self.rays_cast = 0
        self.registry.register(_StoreCollector(store, self))
        self._children: dict = {}

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        key = (method, route, status)
        children = self._children.get(key)
        if children is None:
            # labels() hashes and locks; the children are cached per label set.
            children = (self.requests.labels(method, route, str(status)), self.latency.labels(method, route))
            self._children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def count_rays(self, count: int) -> None:
        # One event loop thread increments it; worker threads do not.
        self.rays_cast += count

    def render(self) -> bytes:
        return generate_latest(self.registry)
