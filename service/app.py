"""The FastAPI application, built by :func:`create_app`.

Start-up opens every saved scene and compiles (loads from numba's cache) the
kernels of the pick path on a worker thread while the server already answers
``/health``; ``/ready`` turns 200 and the scene routes stop answering 503 when
that is done, and the other kernels compile in the background (:func:`start_up`).
"""

import asyncio
import gc
import logging
import sys
import threading
import time
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi_offline import FastAPIOffline
from starlette.concurrency import run_in_threadpool

from .ops import warmup
from .api.direct_route import DirectRoutes
from .api.errors import client_hung_up, http_error, install_error_handlers, method_table
from .live.hub import LiveHub
from .ops.memory import limit_arenas
from .ops.metrics import Metrics
from .queries.reader_processes import start_readers
from .api.limits import BuildSlots
from .api.middleware import ApiKeyAuth, BodyLimit, RequestMetrics
from .api.openapi import install_schemas, operation_id
from .api.responses import JSONBytes
from .api.routes import export, health, idbuffer, live, objects, picks, proximity, render, scenes, select, viewer
from .api.routes.export import EXPOSED_HEADERS as EXPORT_HEADERS
from .api.routes.idbuffer import EXPOSED_HEADERS as IDBUFFER_HEADERS
from .api.routes.render import CAMERA_HEADER
from .settings import Settings, get_settings
from .store.idempotency import KeyPolicy
from .store.store import SceneStore

log = logging.getLogger("service")

#: Where ``/docs`` and ``/redoc`` load Swagger UI's and ReDoc's scripts and style sheet from: the
#: files the fastapi-offline package ships, served by the service itself rather than by a CDN.
DOCS_ASSETS = "/docs/static"

#: The API's own documentation: its pages, their scripts and style sheet, and the OpenAPI document.
DOCS_PATHS = frozenset({"/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json",
                        *(f"{DOCS_ASSETS}/{name}" for name in ("swagger-ui-bundle.js", "swagger-ui.css",
                                                                "redoc.standalone.js"))})


def open_paths(settings: Settings) -> frozenset[str]:
    """The paths that answer without the API key: probes, metrics, the viewer's static page (it
    holds no data; it asks for the key before it calls the API) and, with ``PICK_OPEN_DOCS``,
    the API's own documentation."""
    return health.OPEN_PATHS | viewer.VIEWER_PATHS | (DOCS_PATHS if settings.open_docs else frozenset())


def start_up(store: SceneStore, warm_up: bool, stopping: threading.Event | None = None,
             readers: int = 0) -> threading.Thread | None:
    """Open the saved scenes and warm the pick path, then mark the store ready.

    With ``warm_up``, the kernels of the pick path (uploads, single, batch
    and camera picks: :func:`service.ops.warmup.stages`) are compiled, or loaded
    from numba's cache, before ``/ready`` turns 200, with a log line per step;
    the rest (occlusion, every-hit picks, selections, edits) then compiles on
    a background thread, which logs when it is done. A request that needs a
    kernel not compiled yet simply waits for numba to compile it (seconds to
    tens of seconds, on a first start only).

    Parameters
    ----------
    store : SceneStore
    warm_up : bool
        Compile the kernels (``PICK_WARM_UP``); tests turn it off.
    stopping : threading.Event, optional
        Set at shutdown: no further warm-up step starts.
    readers : int
        With ``warm_up``, the upload readers' pool is started with this many
        processes before the service is ready (``service.queries.reader_processes``).

    Returns
    -------
    threading.Thread or None
        The background warm-up (a daemon thread), already started; None
        without ``warm_up`` or when start-up failed or was stopped.
    """
    # Seconds in the log count from the process's start, as its user waits.
    started = time.perf_counter() - warmup.process_age()
    stopping = stopping or threading.Event()
    warming = None
    try:
        skipped = store.open_all()
        if warm_up:
            if readers:
                try:
                    start_readers(readers)
                except Exception:
                    # Not a reason to stay unready: the first upload tries again.
                    log.exception("could not start a process to read uploads in")
            warming = warmup.ServiceWarmUp(store, started, stopping)
            if not warming.pick_path():
                return None
    except Exception:
        log.exception("start-up failed: the service stays unready")
        store.waiting_for = "nothing: start-up failed (see the service's log)"
        return None
    if warming is not None:
        # Before ready: /ready never answers 200 without saying what still compiles.
        store.compiling = warming.compiling()
    _freeze_what_start_up_made()
    store.ready = True
    log.info("ready in %.1f s: %d scenes open%s%s", time.perf_counter() - started, len(store),
             f", {len(skipped)} damaged skipped" if skipped else "", f"; {warming.summary()}" if warming else "")
    if warming is None:
        return None
    background = threading.Thread(target=_warm_rest, args=(warming,), name="kernel warm-up", daemon=True)
    background.start()
    return background


def _warm_rest(warming: warmup.ServiceWarmUp) -> None:
    try:
        warming.rest()
    except Exception:
        # The service stays ready: each query compiles what it needs on first use.
        warming.store.compiling = None
        log.exception("compiling the remaining kernels failed; queries compile them on first use")
    _freeze_what_start_up_made()


def _freeze_what_start_up_made() -> None:
    """Move every object alive now out of the garbage collector's sight.

    Start-up leaves some 175,000 long-lived objects (the libraries, numba's
    compiled kernels, the scenes); a full collection walks them all, about
    100 ms on this machine, and it comes every so often under load, as a
    pause of every request in flight. Frozen, they are never walked; what
    requests allocate is collected as before (``gc.freeze``, Python 3.7+).
    """
    gc.collect()
    gc.freeze()


#: The interpreter's thread switch interval in the service (Python's default: 5 ms).
SWITCH_INTERVAL_SECONDS = 0.001


def make_store(settings: Settings) -> SceneStore:
    """The store over a data directory, or over an object store (``PICK_STORE=s3://...``)."""
    backend = settings.scene_dir
    if settings.object_store:
        from .store.object_store import ObjectStore
        from .store.s3 import ObjectStoreBackend

        backend = ObjectStoreBackend(ObjectStore(settings.store, timeout=settings.store_timeout_seconds),
                                     settings.data_dir, poll_seconds=settings.store_poll_seconds)
    return SceneStore(backend, checkpoint_records=settings.checkpoint_records,
                      checkpoint_seconds=settings.checkpoint_seconds,
                      key_policy=KeyPolicy(settings.idempotency_retention_s, settings.idempotency_keys))


def create_app(settings: Settings | None = None) -> FastAPI:
    """The app, with its own scene store and metrics.

    Parameters
    ----------
    settings : Settings, optional
        Default: read from the ``PICK_*`` environment variables.
    """
    settings = settings or get_settings()
    limit_arenas()
    # A thread running Python (reading or building an upload, rendering a large
    # answer) gives the interpreter lock up every switch interval; the event
    # loop needs it back after each system call of a request, so with the
    # default 5 ms a /health answer waited up to 5 ms several times over.
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    if not logging.getLogger().handlers:
        # A uvicorn worker process starts without the parent's logging set-up.
        logging.basicConfig(level=settings.log_level.upper(),
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    store = make_store(settings)
    metrics = Metrics(store)
    live_hub = LiveHub(settings.live_queue, settings.live_event_ms / 1000.0)
    # The store calls it after every saved edit, this process's or another worker's.
    store.on_change = live_hub.publish
    store.listened = live_hub.listened

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        live_hub.start(asyncio.get_running_loop(), store)
        stopping = threading.Event()
        opening = asyncio.create_task(run_in_threadpool(start_up, store, settings.warm_up, stopping,
                                                        settings.max_concurrent_builds))
        yield
        # A warm-up step under way finishes (numba cannot be interrupted);
        # none starts after it. The background thread is a daemon: not waited for.
        stopping.set()
        live_hub.stop()
        await opening
        # The checkpoints due are written; the journal would replay them anyway.
        await run_in_threadpool(store.close)

    # FastAPI's own /docs and /redoc load their scripts from a CDN: a blank page on a machine
    # without the Internet. FastAPIOffline serves the same pages with the scripts from DOCS_ASSETS,
    # and the project's icon (relative: it stays right behind a proxy's path prefix).
    app = FastAPIOffline(title="bvh-pick", version="0.1.0", lifespan=lifespan, default_response_class=JSONBytes,
                         description="Closest-surface picking over HTTP: upload a scene, then cast rays at it.",
                         static_url=DOCS_ASSETS, favicon_url="favicon.ico",
                         generate_unique_id_function=operation_id)
    app.state.settings = settings
    app.state.store = store
    app.state.metrics = metrics
    app.state.live_hub = live_hub
    app.state.build_slots = BuildSlots(settings.max_concurrent_builds)
    install_error_handlers(app)

    # The pick routes first: the router tries routes in order, and these are the hot ones.
    routers = (picks.direct_router, objects.direct_router, picks.router, health.router, select.router,
               idbuffer.router, proximity.router, render.router, scenes.router, objects.router, export.router,
               live.router, viewer.router)
    for router in routers:
        app.include_router(router)
    # What a 405 or an OPTIONS request lists in Allow: every method of every route on the path.
    app.state.method_table = method_table([*app.router.routes, *(route for router in routers
                                                                  for route in router.routes)])

    # add_middleware wraps what is there: the last added runs first.
    app.add_middleware(DirectRoutes, routes=picks.direct_router.routes + objects.direct_router.routes,
                       http_error=http_error, client_hung_up=client_hung_up)
    app.add_middleware(BodyLimit, limit_mb=settings.max_upload_mb)
    unlocked = open_paths(settings)
    if settings.api_key is not None:
        app.add_middleware(ApiKeyAuth, api_key=settings.api_key.get_secret_value(), open_paths=unlocked)
    if settings.cors_origins:
        # Outside the key check: browsers send CORS preflights without credentials.
        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["*"],
                           allow_headers=["*"], expose_headers=[*IDBUFFER_HEADERS, CAMERA_HEADER, *EXPORT_HEADERS])
    app.add_middleware(RequestMetrics, metrics=metrics)
    install_schemas(app, secured=settings.api_key is not None, open_paths=unlocked)
    return app
