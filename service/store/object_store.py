"""Scenes in S3-compatible object storage: where ``PICK_STORE=s3://bucket/prefix`` puts them.

The client is obstore (Rust's ``object_store`` behind a small Python API):
it does conditional creates (``put(..., mode="create")``, an S3
``If-None-Match: *`` that fails with ``AlreadyExistsError``), which is what
makes one writer per scene possible without a lock server, and it needs no
botocore. Endpoint and credentials come from the standard environment
(``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_REGION``, ``AWS_ALLOW_HTTP``), which ``S3Store.from_url`` reads.

Transient failures (a refused connection while the server restarts, a
timeout, a 5xx) are retried here with exponential backoff for at most
``timeout`` seconds, then raised as :class:`service.api.errors.StoreUnavailable`
(503 with ``Retry-After``). obstore's own retries are off, so that this
module knows when a request was sent again: a conditional create whose
answer was lost and that is sent again meets its own object, which is
recognised by its bytes (:meth:`ObjectStore.put_new`).
"""

from __future__ import annotations

import concurrent.futures
import os
import random
import time
from datetime import timedelta
from pathlib import Path

import obstore
from obstore.exceptions import AlreadyExistsError, NotFoundError, PreconditionError
from obstore.store import S3Store

from ..api.errors import StoreUnavailable

S3_SCHEME = "s3://"

#: First and largest pause between two attempts of a failed request, in seconds.
FIRST_BACKOFF, LARGEST_BACKOFF = 0.05, 1.0

#: Files of a directory transferred at once.
TRANSFERS = 8


def is_object_store(location: str | None) -> bool:
    """Whether ``PICK_STORE`` names an object store (``s3://bucket/prefix``) rather than a directory."""
    return location is not None and str(location).startswith(S3_SCHEME)


def parse_location(location: str) -> tuple[str, str]:
    """``(bucket, prefix)`` of ``s3://bucket/prefix`` (the prefix may be empty).

    Raises
    ------
    ValueError
        Not an ``s3://`` location, or no bucket.
    """
    if not is_object_store(location):
        raise ValueError(f"PICK_STORE {location!r} is not an s3://bucket/prefix location")
    bucket, _, prefix = location[len(S3_SCHEME):].partition("/")
    if not bucket:
        raise ValueError(f"PICK_STORE {location!r} names no bucket")
    return bucket, prefix.strip("/")


def _transient(error: Exception) -> bool:
    """Worth sending again: not an answer about the object (missing, exists, precondition)."""
    return not isinstance(error, (NotFoundError, FileNotFoundError, AlreadyExistsError, PreconditionError,
                                  ValueError, TypeError))


class ObjectStore:
    """One bucket prefix of an S3-compatible store, with bounded retries.

    Parameters
    ----------
    location : str
        ``s3://bucket/prefix``.
    timeout : float
        Seconds a request is retried for before :class:`StoreUnavailable`.

    Paths given to the methods are relative to the prefix (``scenes/<id>/...``).
    """

    def __init__(self, location: str, timeout: float = 10.0):
        self.location = location
        self.bucket, self.prefix = parse_location(location)
        self.timeout = timeout
        # Client options given here replace those obstore reads from the environment:
        # AWS_ALLOW_HTTP (a plain-HTTP endpoint) is passed on by hand.
        options = {"connect_timeout": "2s", "timeout": f"{max(timeout, 30.0):.0f}s",
                   "allow_http": os.environ.get("AWS_ALLOW_HTTP", "").lower() in ("1", "true", "yes")}
        self._store = S3Store.from_url(
            location, retry_config={"max_retries": 0, "retry_timeout": timedelta(seconds=timeout)},
            client_options=options)

    def _call(self, what: str, request, timeout: float | None = None):
        """``request()``, sent again on transient failures for up to ``timeout`` seconds.

        Returns ``(result, attempts)``."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        pause = FIRST_BACKOFF
        attempts = 0
        while True:
            attempts += 1
            try:
                return request(), attempts
            except Exception as error:
                if not _transient(error):
                    raise
                left = deadline - time.monotonic()
                if left <= 0:
                    raise StoreUnavailable(self.location, what, error) from None
            time.sleep(min(left, pause * random.uniform(0.5, 1.0)))
            pause = min(pause * 2, LARGEST_BACKOFF)

    def put(self, path: str, data: bytes, timeout: float | None = None) -> None:
        """Write ``path`` whole (replacing it)."""
        self._call(f"write {path}", lambda: obstore.put(self._store, path, data, use_multipart=False), timeout)

    def put_new(self, path: str, data: bytes, timeout: float | None = None) -> bool:
        """Create ``path`` unless it exists (one atomic conditional create).

        Returns
        -------
        bool
            True when this call made it (or a lost answer's retry found it
            holding exactly ``data``), False when another writer made it first.
        """
        attempts = 0

        def create():
            nonlocal attempts
            attempts += 1
            obstore.put(self._store, path, data, mode="create", use_multipart=False)

        try:
            self._call(f"create {path}", create, timeout)
            return True
        except (AlreadyExistsError, PreconditionError):
            if attempts > 1 and self.get(path, timeout) == data:
                return True
            return False

    def get(self, path: str, timeout: float | None = None) -> bytes | None:
        """The object's bytes, None when it does not exist."""
        try:
            result, _ = self._call(f"read {path}", lambda: bytes(obstore.get(self._store, path).bytes()), timeout)
            return result
        except (NotFoundError, FileNotFoundError):
            return None

    def list(self, prefix: str, timeout: float | None = None, after: str | None = None) -> list[str]:
        """Paths of every object under ``prefix`` (a folder: ``scenes/<id>/``), sorted;
        with ``after``, only those that sort after that path."""
        def listing():
            return sorted(meta["path"] for batch in obstore.list(self._store, prefix, offset=after, chunk_size=1000)
                          for meta in batch)
        return self._call(f"list {prefix}", listing, timeout)[0]

    def folders(self, prefix: str, timeout: float | None = None) -> list[str]:
        """Names of the folders directly under ``prefix`` (``scenes/``), sorted."""
        def listing():
            found = obstore.list_with_delimiter(self._store, prefix)
            return sorted(path.rstrip("/").rsplit("/", 1)[-1] for path in found["common_prefixes"])
        return self._call(f"list {prefix}", listing, timeout)[0]

    def delete(self, paths: list[str], timeout: float | None = None) -> None:
        """Delete objects (missing ones are no error)."""
        if paths:
            self._call(f"delete {len(paths)} objects", lambda: obstore.delete(self._store, list(paths)), timeout)

    def upload(self, directory: Path, names: list[str], prefix: str, last: str | None = None) -> None:
        """Upload ``directory/<name>`` as ``prefix/<name>`` for each name, in parallel, then ``last`` alone.

        ``last`` (a manifest) is uploaded once every other file is in the
        store: whoever finds it finds everything it names.
        """
        def send(name):
            path = f"{prefix}/{name}"
            data = Path(directory, name).read_bytes()
            self._call(f"write {path}", lambda: obstore.put(self._store, path, data))

        with concurrent.futures.ThreadPoolExecutor(TRANSFERS) as pool:
            list(pool.map(send, [name for name in names if name != last]))
        if last is not None:
            send(last)

    def download(self, prefix: str, names: list[str], directory: Path) -> None:
        """Download ``prefix/<name>`` into ``directory/<name>`` for each name, in parallel.

        Raises
        ------
        FileNotFoundError
            One of them is not in the store.
        """
        directory.mkdir(parents=True, exist_ok=True)

        def fetch(name):
            path = f"{prefix}/{name}"
            data = self.get(path)
            if data is None:
                raise FileNotFoundError(f"{self.location}/{path} is missing")
            with open(os.path.join(directory, name), "wb") as stream:
                stream.write(data)

        with concurrent.futures.ThreadPoolExecutor(TRANSFERS) as pool:
            list(pool.map(fetch, names))
