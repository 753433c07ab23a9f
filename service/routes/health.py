"""``/health`` (alive), ``/ready`` (scenes opened, kernels compiled), ``/metrics`` (Prometheus)."""

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST

from ..deps import SceneStoreDep
from ..responses import JSONBytes
from ..schemas import Health, Readiness

router = APIRouter(tags=["service"])

_HEALTHY = b'{"status":"ok"}'


@router.get("/health", response_model=Health)
async def health():
    """The process answers; says nothing about scenes (see ``/ready``)."""
    return Response(_HEALTHY, media_type="application/json")


@router.get("/ready", response_model=Readiness, responses={503: {"model": Readiness}})
async def ready(store: SceneStoreDep):
    """200 once the saved scenes are open and the kernels compiled, 503 before."""
    if store.ready:
        return JSONBytes({"status": "ready", "scenes": len(store)})
    return JSONBytes({"status": "starting", "scenes": len(store)}, status_code=503, headers={"Retry-After": "1"})


@router.get("/metrics", response_class=Response,
            responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Prometheus text format"}})
async def metrics(request: Request):
    """Requests and latency by route and status, rays cast, scenes, triangles (this process's)."""
    return Response(request.app.state.metrics.render(), media_type=CONTENT_TYPE_LATEST)
