"""``/health`` (alive), ``/ready`` (scenes opened, kernels compiled), ``/metrics`` (Prometheus)."""

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST

from ..deps import SceneStoreDep
from ..responses import JSONBytes
from ..schemas import Health, Readiness

router = APIRouter(tags=["service"])

#: These answer without a token: probes carry none.
OPEN_PATHS = frozenset({"/health", "/ready"})
#: An ``admin`` token's, unless ``PICK_OPEN_METRICS`` opens them to a scraper that carries none.
METRICS_PATHS = frozenset({"/metrics"})

_HEALTHY = b'{"status":"ok"}'


@router.get("/health", response_model=Health)
async def health():
    """The process answers; says nothing about scenes (see ``/ready``)."""
    return Response(_HEALTHY, media_type="application/json")


@router.get("/ready", response_model=Readiness, responses={503: {"model": Readiness}})
async def ready(store: SceneStoreDep):
    """200 once the saved scenes are open and the pick path's kernels compiled,
    503 before; ``waiting_for`` says what start-up is doing, ``compiling``
    what still compiles in the background once ready."""
    if store.ready:
        body = {"status": "ready", "scenes": len(store)}
        compiling = store.compiling
        if compiling is not None:
            body["compiling"] = compiling
        return JSONBytes(body)
    return JSONBytes({"status": "starting", "scenes": len(store), "waiting_for": store.waiting_for},
                     status_code=503, headers={"Retry-After": "1"})


@router.get("/metrics", response_class=Response,
            responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}},
                             "description": f"Prometheus text format ({CONTENT_TYPE_LATEST})"}})
async def metrics(request: Request):
    """Requests and latency by route and status, rays cast, scenes, triangles (this process's)."""
    return Response(request.app.state.metrics.render(), media_type=CONTENT_TYPE_LATEST)
