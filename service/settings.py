"""The service's settings, read from ``PICK_*`` environment variables."""

import ipaddress
import json
from functools import lru_cache
from pathlib import Path
from typing import Annotated

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

MEGABYTE = 1024 * 1024

#: Most objects one answer lists: a page of ``GET /scenes/{id}/objects``, and the objects
#: ``GET /scenes/{id}`` inlines (``inline_objects``).
MAX_PAGE_OBJECTS = 10_000


class Settings(BaseSettings):
    """Everything the service can be told, one field per ``PICK_<NAME>`` variable.

    Attributes
    ----------
    host, port : str, int
        Where ``python -m service`` listens. A host other than a loopback
        address (``127.0.0.1``, ``::1``, ``localhost``) lets other machines in:
        ``python -m service`` then refuses to start without ``api_key``, unless
        ``allow_open`` says that is meant (:meth:`open_to_the_network`).
    data_dir : Path
        Saved scenes live here, one directory per scene (see ``service.store``);
        in S3 mode, this process's cache (``data_dir/cache-<pid>-<random>``).
    store : str or None
        Where scenes live (``PICK_STORE``). Unset, or a directory: the
        embedded store in that directory (``data_dir`` is then ignored).
        ``s3://bucket/prefix``: an S3-compatible object store, reached with
        the standard ``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
        ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION`` (and ``AWS_ALLOW_HTTP=true``
        for a plain-HTTP endpoint); scenes are opened lazily and cached per
        process under ``data_dir`` (see ``service.store.s3``).
    store_poll_seconds : float
        S3 mode: the pause between two looks for other processes' edits of
        the scenes in memory; an edit made elsewhere is seen here within this
        plus one store round trip per scene in memory plus applying it.
    store_timeout_seconds : float
        S3 mode: how long a store request is retried (connection refused
        while the store restarts) before the route answers 503 with
        ``Retry-After``; also how long an edit waits for its journal segment.
    workers : int
        uvicorn worker processes. Each opens the saved scenes by memory map,
        so the page cache holds one copy of each scene's arrays for all.
    max_upload_mb : float
        Largest request body, in MiB (mebibytes), enforced while the body is read.
    max_expanded_mb : float or None
        Most an uploaded archive or compressed file (``.zip``, ``.tar.gz``,
        ``.obj.bz2``, ``.3mf``, ...) may expand to, in MiB, all its members
        together; unset: 4 x ``max_upload_mb`` (:attr:`expanded_limit_bytes`).
        Expansion is streamed and counted, and refused with 413 the moment it
        passes this (``bvh.io.archives``), before it is held in memory.
    max_expansion_ratio : float
        Most an upload may expand per compressed byte, past its first 16 MiB:
        meshes compress a few to a few tens of times; a compression bomb
        (a kilobyte of bz2 holding gigabytes of zeros) thousands of times, and
        is refused with 413 after 16 MiB rather than after ``max_expanded_mb``.
    max_texture_pixels : int
        Most pixels (width x height, from the image's header, before it is
        decoded) of a texture an upload's alpha-tested material reads; the
        default is 4096 x 4096. More is refused with 413.
    max_concurrent_builds : int
        Most uploads (a file, or inline meshes) read and built at once by one
        worker; one more is answered 503 with ``Retry-After`` at once.
    max_rays : int
        Most rays (or pixels) one request may cast.
    max_idbuffer_pixels : int
        Most pixels of one ID buffer (``/scenes/{id}/idbuffer``); the default
        is a 3840 x 2160 image. Its answer, at up to 26 bytes per pixel, is
        also held to ``max_response_mb``.
    inline_objects : int
        Most objects ``GET /scenes/{id}`` (and ``POST /scenes``' answer)
        lists, and the live channel's ``hello`` and ``resync``, the first
        by id; the answer's ``object_count`` and
        ``objects_next_after`` say how many there are and where
        ``GET /scenes/{id}/objects?after=`` goes on. At most
        :data:`MAX_PAGE_OBJECTS`.
    max_response_mb : float
        Largest answer, in MiB, checked before the work starts from an upper
        bound on its size (so a request is refused with 413 rather than
        answered with more): a JSON camera pick or batch from its number of
        rays, a binary batch at 32 bytes per ray, a render at 3 bytes per
        pixel; an ``all_hits`` pick and a ``triangles`` selection, whose size
        only the query tells, are checked after it and before serialising.
        The default lets a binary batch of ``max_rays`` rays through.
    api_key : SecretStr or None
        When set, every route needs ``Authorization: Bearer <api_key>`` except
        ``/health``, ``/ready``, ``/metrics`` and the viewer's static files
        (``/``, ``/favicon.ico``, ``/viewer``, ``/viewer/<file>``: they hold no
        data), and the API's documentation when ``open_docs`` is set; the live
        channel takes it there or in its first message.
    allow_open : bool
        Serve without ``api_key`` on a non-loopback ``host`` (behind a proxy
        that authenticates, or on a network where everyone may edit every
        scene). Off: ``python -m service`` refuses to start that way.
    open_docs : bool
        With ``api_key`` set, answer the API's documentation (``/docs``,
        ``/docs/oauth2-redirect``, ``/redoc``, ``/openapi.json`` and the pages'
        scripts and style sheet under ``/docs/static/``) without it; off, they
        need the key like the rest of the API.
    cors_origins : list of str
        Origins allowed by CORS; ``PICK_CORS_ORIGINS`` is comma-separated
        (or a JSON list). Empty: no CORS headers.
    log_level : str
        uvicorn's and the service's log level.
    access_log : bool
        uvicorn's line per request; off by default (``/metrics`` counts
        requests, and the line costs more than a pick).
    warm_up : bool
        Run every kind of query once at start-up (``service.ops.warmup``), so that
        no request waits for numba to compile or load a kernel; ``/ready``
        turns 200 after it (about 2 s with numba's cache filled, minutes
        without); a process that reads uploads is started before it too
        (``service.queries.reader_processes``). Tests turn it off: each app
        they start would pay it.
    checkpoint_records, checkpoint_seconds : int, float
        Every edit is journaled and durable before it is answered; a scene's
        checkpoint (its whole saved state, after which the journal restarts)
        is written in the background once a worker has journaled this many
        of its edits, or the oldest of them is this many seconds old. Fewer
        records replay faster after a crash; more cost less disk writing.
    idempotency_retention_s, idempotency_keys : float, int
        A write sent with an ``Idempotency-Key`` header (or a live edit with
        a string ``id``) is recorded with its key, and a repeat within this
        many seconds is answered with the first answer instead of being
        applied again (``service.api.idempotency``); each scene remembers at
        most this many keys (and 16 MB of their answers), the oldest going first.
    live_queue : int
        Change events a client of the live channel (``/scenes/{id}/live``)
        may have waiting while it reads too slowly (past 16 they are
        coalesced per object; this also bounds the objects held); past it,
        they are dropped and the client is sent the object table afresh
        instead (a ``resync``, bounded as a hello) when it reads again.
    live_event_ms : float
        A scene's change events are handed to its live clients at most once
        in this many milliseconds: what arrives in between goes out
        together, each run of moves as one event. At most one hand-out per
        60 Hz display frame (16.7 ms), so a viewer misses nothing it could
        draw; with 32 editors dragging at 60 Hz each, it saves most of the
        frames that fan-out would send. 0: every event as it comes.
    sample_scenes : bool
        ``python -m service`` creates the scenes of ``sample_meshes`` on the
        first start in ``data_dir`` (``make serve`` sets it), so a newcomer
        can pick at once; a marker file keeps them from coming back once deleted.
    """

    model_config = SettingsConfigDict(env_prefix="PICK_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    data_dir: Path = Path("./data")
    store: str | None = None
    store_poll_seconds: float = Field(0.1, gt=0)
    store_timeout_seconds: float = Field(10.0, gt=0)
    workers: int = Field(1, ge=1)
    max_upload_mb: float = Field(200.0, gt=0)
    max_expanded_mb: float | None = Field(None, gt=0)
    max_expansion_ratio: float = Field(100.0, ge=1)
    max_texture_pixels: int = Field(4096 * 4096, ge=1)
    max_concurrent_builds: int = Field(2, ge=1)
    max_rays: int = Field(4_000_000, ge=1)
    max_idbuffer_pixels: int = Field(3840 * 2160, ge=1)
    inline_objects: int = Field(MAX_PAGE_OBJECTS, ge=1, le=MAX_PAGE_OBJECTS)
    max_response_mb: float = Field(128.0, gt=0)
    api_key: SecretStr | None = None
    allow_open: bool = False
    open_docs: bool = False
    cors_origins: Annotated[list[str], NoDecode] = []
    log_level: str = "info"
    access_log: bool = False
    warm_up: bool = True
    sample_scenes: bool = False
    checkpoint_records: int = Field(10_000, ge=1)
    checkpoint_seconds: float = Field(30.0, gt=0)
    idempotency_retention_s: float = Field(24 * 3600.0, gt=0)
    idempotency_keys: int = Field(10_000, ge=1)
    live_queue: int = Field(1024, ge=1)
    live_event_ms: float = Field(16.0, ge=0, le=1000)

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _split_origins(cls, value):
        # An environment variable is one string: accept "a,b" as well as a JSON list.
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                return json.loads(text)
            return [origin.strip() for origin in text.split(",") if origin.strip()]
        return value

    @field_validator("store")
    @classmethod
    def _check_store(cls, value):
        if value is not None and not value.strip():
            return None
        if value is not None and value.startswith("s3://"):
            from .store.object_store import parse_location
            parse_location(value)
        return value

    @property
    def object_store(self) -> bool:
        """Whether scenes live in an object store (``PICK_STORE=s3://...``)."""
        return self.store is not None and self.store.startswith("s3://")

    @property
    def expanded_limit_bytes(self) -> int:
        """Most bytes an upload may expand to: ``max_expanded_mb``, or 4 x ``max_upload_mb``."""
        return int((self.max_expanded_mb or 4 * self.max_upload_mb) * MEGABYTE)

    @property
    def scene_dir(self) -> Path:
        """The embedded store's directory, or this process's cache parent in S3 mode."""
        return Path(self.store) if self.store is not None and not self.object_store else self.data_dir

    @property
    def loopback(self) -> bool:
        """Whether ``host`` is a loopback address, which other machines cannot reach."""
        if self.host.strip().lower() == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host.strip().strip("[]")).is_loopback
        except ValueError:
            return False

    def open_to_the_network(self) -> str | None:
        """Why serving on ``host`` would let anyone who reaches it change every scene, in words
        that say what to do; None when it would not (a loopback host, a key, or ``allow_open``)."""
        if self.loopback or self.api_key is not None or self.allow_open:
            return None
        return (f"PICK_HOST={self.host} is not a loopback address and PICK_API_KEY is not set: anyone who "
                f"can reach port {self.port} could upload, change and delete every scene. Set PICK_API_KEY to a "
                "long random secret (e.g. PICK_API_KEY=$(python -c 'import secrets; "
                "print(secrets.token_urlsafe(32))'); clients then send 'Authorization: Bearer <key>'), or set "
                "PICK_ALLOW_OPEN=true to serve without a key on purpose (behind a proxy that authenticates), or "
                "PICK_HOST=127.0.0.1 to serve this machine only.")

    @field_validator("api_key", mode="before")
    @classmethod
    def _empty_key_is_no_key(cls, value):
        # PICK_API_KEY= (set but empty) must not mean "the key is the empty string".
        if isinstance(value, str) and not value.strip():
            return None
        return value


@lru_cache
def get_settings() -> Settings:
    """The process's settings, read from the environment once."""
    return Settings()
