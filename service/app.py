"""The FastAPI application, built by :func:`create_app`.

Start-up opens every saved scene and compiles (loads from numba's cache) the
kernels on a worker thread while the server already answers ``/health``;
``/ready`` turns 200 and the scene routes stop answering 503 when that is done.
"""

import asyncio
import logging
import time
from contextlib import asynccontextmanager

import numpy as np
from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from starlette.concurrency import run_in_threadpool

from . import warmup
from .direct_route import DirectRoutes
from .errors import http_error, install_error_handlers
from .metrics import Metrics
from .middleware import ApiKeyAuth, BodyLimit, RequestMetrics
from .openapi import install_schemas
from .responses import JSONBytes
from .routes import health, objects, picks, render, scenes, select, viewer
from .settings import Settings, get_settings
from .store import SceneStore

log = logging.getLogger("service")


def start_up(store: SceneStore, warm_up: bool) -> None:
    try:
        skipped = store.open_all()
        if warm_up:
            started = time.perf_counter()
            for _, step in warmup.everything(np.random.default_rng(0), bare_mesh=False):
                step()
            log.info("kernels warm in %.1f s", time.perf_counter() - started)
    except Exception:
        log.exception("start-up failed: the service stays unready")
        return
    store.ready = True
    log.info("ready: %d scenes open%s", len(store), f", {len(skipped)} damaged skipped" if skipped else "")


def create_app(settings: Settings | None = None) -> FastAPI:
    """The app, with its own scene store and metrics.

    Parameters
    ----------
    settings : Settings, optional
        Default: read from the ``PICK_*`` environment variables.
    """
    settings = settings or get_settings()
    if not logging.getLogger().handlers:
        # A uvicorn worker process starts without the parent's logging set-up.
        logging.basicConfig(level=settings.log_level.upper(),
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    store = SceneStore(settings.data_dir)
    metrics = Metrics(store)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        opening = asyncio.create_task(run_in_threadpool(start_up, store, settings.warm_up))
        yield
        await opening

    app = FastAPI(title="bvh-pick", version="0.1.0", lifespan=lifespan, default_response_class=JSONBytes,
                  description="Closest-surface picking over HTTP: upload a scene, then cast rays at it.")
    app.state.settings = settings
    app.state.store = store
    app.state.metrics = metrics
    install_error_handlers(app)

    # The pick routes first: the router tries routes in order, and these are the hot ones.
    for router in (picks.direct_router, picks.router, health.router, select.router, render.router, scenes.router,
                   objects.router, viewer.router):
        app.include_router(router)

    # add_middleware wraps what is there: the last added runs first.
    app.add_middleware(DirectRoutes, routes=picks.direct_router.routes,
                       http_error=http_error)
    app.add_middleware(BodyLimit, limit_mb=settings.max_upload_mb)
    if settings.api_key is not None:
        app.add_middleware(ApiKeyAuth, api_key=settings.api_key.get_secret_value())
    if settings.cors_origins:
        # Outside the key check: browsers send CORS preflights without credentials.
        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["*"],
                           allow_headers=["*"])
    app.add_middleware(RequestMetrics, metrics=metrics)
    install_schemas(app, secured=settings.api_key is not None)
    return app
