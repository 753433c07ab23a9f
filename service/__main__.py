"""``python -m service``: serve the API with uvicorn, configured by ``PICK_*`` variables."""

import logging
import sys

import uvicorn

from .ops.samples import MARKER as SAMPLES_MARKER, create_sample_scenes
from .settings import MEGABYTE, Settings, get_settings


def websocket_options(settings: Settings) -> dict:
    """uvicorn's WebSocket options for the live channel (tests and benchmarks serve with them too).

    The websockets library's sans-I/O implementation (uvicorn's ``websockets``
    one is deprecated) with the frames of one turn of the event loop sent in
    one write (:mod:`service.live.protocol`), frames up to the upload
    limit as for HTTP bodies. Per-message compression stays on for clients
    that ask for it (browsers do): about 3.5 µs a pick answer here, against
    some 100 µs for the pick.
    """
    return {"ws": "service.live.protocol:CorkedWebSocketProtocol",
            "ws_max_size": int(settings.max_upload_mb * MEGABYTE)}


def main() -> int:
    settings = get_settings()
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    refusal = settings.open_to_the_network()
    if refusal is not None:
        logging.getLogger("service").error("not starting: %s", refusal)
        return 2
    if settings.sample_scenes and not settings.object_store:
        # Before uvicorn starts: the workers then open the samples like any saved scene.
        if not (settings.scene_dir / SAMPLES_MARKER).exists():
            # On a first start this also compiles the mesh builder: say so before the silence.
            logging.getLogger("service").info("creating the sample scenes in %s", settings.scene_dir)
        create_sample_scenes(settings.scene_dir)
    # An import string and a factory: each worker process (PICK_WORKERS) builds its own app.
    uvicorn.run("service.app:create_app", factory=True, host=settings.host, port=settings.port,
                workers=settings.workers, log_level=settings.log_level, access_log=settings.access_log,
                **websocket_options(settings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
