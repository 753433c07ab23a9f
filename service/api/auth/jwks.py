"""The public keys of an identity provider, from a JWKS file or URL, kept fresh within bounds."""

import json
import logging
import threading
import time
import urllib.request
from pathlib import Path

import jwt

log = logging.getLogger("service.auth")

#: How long a fetch of a JWKS URL may take before the keys held are kept instead.
FETCH_TIMEOUT_SECONDS = 5.0
#: Largest JWKS document read: an identity provider's is a few kilobytes.
MAX_JWKS_BYTES = 1024 * 1024


class JwksKeys:
    """The signing keys of a JWK Set (RFC 7517), by ``kid``, from a file or an http(s) URL.

    The set is read on first use and again every ``refresh_seconds``; a
    token naming a ``kid`` not held makes it read again early (a provider
    that rotated its keys), at most once every ``retry_seconds``, so tokens
    with made-up ``kid`` s cannot make the service hammer the provider or
    the disk. A read that fails keeps the keys held (and is logged).

    Parameters
    ----------
    source : str
        A file path or an ``http://`` / ``https://`` URL.
    refresh_seconds : float
        Most time a set is used before it is read again.
    retry_seconds : float
        Least time between two reads.
    """

    def __init__(self, source: str, refresh_seconds: float = 300.0, retry_seconds: float = 30.0):
        self.source = source
        self.refresh_seconds = refresh_seconds
        self.retry_seconds = retry_seconds
        self.keys: dict[str | None, list[jwt.PyJWK]] = {}
        self.read_at = -float("inf")
        self.lock = threading.Lock()

    @property
    def remote(self) -> bool:
        return self.source.startswith(("http://", "https://"))

    def due(self, kid: str | None) -> bool:
        """Whether the set should be read before a token with this ``kid`` is checked."""
        age = time.monotonic() - self.read_at
        return age >= self.refresh_seconds or (kid not in self.keys and age >= self.retry_seconds)

    def refresh(self, kid: str | None = None) -> None:
        """Read the set again if :meth:`due` (blocking: call it off the event loop for a URL)."""
        with self.lock:
            if not self.due(kid):
                return
            self.read_at = time.monotonic()
            try:
                document = self.fetch()
                keys: dict[str | None, list[jwt.PyJWK]] = {}
                for entry in document.get("keys", []):
                    if entry.get("use", "sig") != "sig":
                        continue
                    try:
                        key = jwt.PyJWK(entry)
                    except jwt.PyJWTError as error:
                        log.warning("JWKS %s: key %r skipped: %s", self.source, entry.get("kid"), error)
                        continue
                    keys.setdefault(key.key_id, []).append(key)
                    if key.key_id is not None:
                        keys.setdefault(None, []).append(key)
            except (OSError, ValueError, AttributeError) as error:
                log.warning("could not read the JWKS %s (the keys held stay in use): %s", self.source, error)
                return
            self.keys = keys

    def fetch(self) -> dict:
        if self.remote:
            request = urllib.request.Request(self.source, headers={"Accept": "application/json"})
            with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_SECONDS) as answer:
                return json.loads(answer.read(MAX_JWKS_BYTES + 1)[:MAX_JWKS_BYTES])
        return json.loads(Path(self.source).read_bytes())

    def candidates(self, kid: str | None) -> list[jwt.PyJWK]:
        """The keys a token with this ``kid`` may be signed with (every key when it has none)."""
        return self.keys.get(kid, [])
