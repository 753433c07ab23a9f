"""``python -m service``: serve the API with uvicorn, configured by ``PICK_*`` variables.

Two operator commands work on a data directory instead (see :mod:`service.store.repair`):

- ``python -m service verify DATA_DIR``: check every scene; exit code 1 when one is damaged.
- ``python -m service repair DATA_DIR SCENE_ID --accept-loss``: keep the records before a
  damaged journal's damage (the rest is written aside).

and one mints a token (see :mod:`service.api.auth`):

- ``python -m service token --scope read [--scene ID ...] [--ttl SECONDS]``: print a JWT signed
  with ``PICK_JWT_SECRET`` (with ``PICK_JWT_AUDIENCE`` and ``PICK_JWT_ISSUER`` when set).
"""

import argparse
import logging
import sys
from pathlib import Path

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


def operator_command(arguments: list[str]) -> int:
    """``verify`` or ``repair``: print the report, return the exit code."""
    from .store import repair

    parser = argparse.ArgumentParser(prog="python -m service", description="Check or repair a data directory "
                                     "of the service (run repair while no service writes to it, or accept that "
                                     "the scene is read again by a running one).")
    commands = parser.add_subparsers(dest="command", required=True)
    checking = commands.add_parser("verify", help="check every scene: checkpoint arrays against their "
                                   "checksums, journal records, manifest; exit code 1 on damage")
    checking.add_argument("data_dir", type=Path)
    repairing = commands.add_parser("repair", help="keep the records before a damaged journal's damage, "
                                    "writing the rest aside")
    repairing.add_argument("data_dir", type=Path)
    repairing.add_argument("scene_id")
    repairing.add_argument("--accept-loss", action="store_true",
                           help="do it: the valid records after the damage are discarded (kept in a file aside)")
    options = parser.parse_args(arguments)
    try:
        if options.command == "verify":
            lines, damaged = repair.verify(options.data_dir)
            code = 1 if damaged else 0
        else:
            lines, code = repair.repair(options.data_dir, options.scene_id, options.accept_loss)
    except FileNotFoundError as error:
        lines, code = [str(error)], 1
    print("\n".join(lines))
    return code


def token_command(arguments: list[str]) -> int:
    """``token``: print a signed token for the settings' ``PICK_JWT_SECRET``; exit code 2 without one."""
    from .api.auth import mint_token

    parser = argparse.ArgumentParser(prog="python -m service token", description="Print a token (a JWT signed "
                                     "with PICK_JWT_SECRET, HS256) for 'Authorization: Bearer <token>' or the live "
                                     "channel's auth message.")
    parser.add_argument("--scope", required=True, choices=("read", "edit", "admin"),
                        help="read: picks, queries, exports, GETs, the live channel's picks; edit: also edits, "
                             "uploads, new scenes; admin: also deleting scenes, /metrics")
    parser.add_argument("--scene", action="append", default=[], metavar="ID",
                        help="restrict the token to this scene (repeat for several); default: every scene")
    parser.add_argument("--ttl", type=float, default=3600.0, metavar="SECONDS",
                        help="seconds until the token expires (default: 3600)")
    options = parser.parse_args(arguments)
    if options.ttl <= 0:
        parser.error("--ttl: a positive number of seconds")
    try:
        settings = get_settings()
    except ValueError as error:
        print(f"python -m service token: {error}", file=sys.stderr)
        return 2
    if settings.jwt_secret is None:
        print("python -m service token: PICK_JWT_SECRET is not set: tokens are signed with it (and the service "
              "must run with the same one to accept them)", file=sys.stderr)
        return 2
    print(mint_token(settings.jwt_secret.get_secret_value(), options.scope, options.scene, options.ttl,
                     audience=settings.jwt_audience, issuer=settings.jwt_issuer))
    return 0


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "token":
        return token_command(sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] in ("verify", "repair", "-h", "--help"):
        return operator_command(sys.argv[1:])
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
