"""Who a bearer token is: the API key, or a signed token (JWT) with scopes and scenes.

The API key (``PICK_API_KEY``) is an ``admin`` token for every scene. A JWT is
verified with PyJWT: HS256 with ``PICK_JWT_SECRET``, or an asymmetric
algorithm (RS256, ES256, ...) with a key of the JWK Set ``PICK_JWT_JWKS``;
its ``exp`` is required, and ``aud`` and ``iss`` are checked when
``PICK_JWT_AUDIENCE`` and ``PICK_JWT_ISSUER`` are set. Claims:

- ``scope`` (or ``scp``): space-separated (or a list): ``read``, ``edit``,
  ``admin``, each implying the ones before it; other words are ignored;
- ``scenes`` (optional): the ids of the only scenes the token may touch.
"""

import asyncio
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass

import jwt
from starlette.concurrency import run_in_threadpool

from .jwks import JwksKeys
from .scopes import SCOPE_NAMES, Scope, creates_scene, required_scope, scene_of
from ...settings import Settings

#: Signed with ``PICK_JWT_SECRET``.
SECRET_ALGORITHMS = frozenset({"HS256"})
#: Signed with a key of ``PICK_JWT_JWKS``: asymmetric only, so a public key is never taken for a secret.
JWKS_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"})

#: Verified tokens kept (an LRU), so that a pick does not pay a signature check each time.
CACHED_TOKENS = 4096
#: How long a verified token is trusted without a new check: bounds how late a key removed from the
#: JWKS stops being accepted.
CACHE_SECONDS = 60.0


class TokenRefused(Exception):
    """The token does not authenticate: a 401 (or close 1008 on the live channel) with ``detail``."""

    def __init__(self, detail: str):
        super().__init__(detail)
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Grant:
    """What a verified token may do.

    Attributes
    ----------
    scope : Scope
        Its highest scope (each implies those below).
    scenes : frozenset of str or None
        The only scenes it may touch; None: every scene.
    expires : float or None
        Its ``exp`` (Unix time); None for the API key.
    """

    scope: Scope
    scenes: frozenset[str] | None = None
    expires: float | None = None

    def expired(self, now: float | None = None) -> bool:
        return self.expires is not None and (time.time() if now is None else now) >= self.expires

    def lacks(self, needed: Scope) -> str | None:
        """The 403 detail when this token's scope is below ``needed``; None when it suffices."""
        if self.scope >= needed:
            return None
        return f'this token lacks the "{needed.label}" scope'

    def forbids_scene(self, scene_id: str) -> str | None:
        """The 403 detail when this token may not touch ``scene_id``; None when it may."""
        if self.scenes is None or scene_id in self.scenes:
            return None
        return f"this token may not touch scene {scene_id!r}: it is restricted to {self.scene_list()}"

    def scene_list(self) -> str:
        shown = sorted(self.scenes or ())
        text = ", ".join(shown[:5]) + (f" and {len(shown) - 5} more" if len(shown) > 5 else "")
        return f"the scenes {text}" if shown else "no scene"

    def refusal(self, method: str, path: str) -> str | None:
        """The 403 detail for a request this token may not make; None when it may."""
        lacking = self.lacks(required_scope(method, path))
        if lacking is not None or self.scenes is None:
            return lacking
        if creates_scene(method, path):
            return f"this token is restricted to {self.scene_list()}: it cannot create a scene"
        scene_id = scene_of(method, path)
        return None if scene_id is None else self.forbids_scene(scene_id)


#: The API key's grant.
ADMIN = Grant(Scope.ADMIN)


def grant_from_claims(claims: dict) -> Grant:
    """A verified JWT's claims as a :class:`Grant`."""
    # "scp" is where some identity providers put the same (a list or a string).
    named = claims.get("scope", claims.get("scp", ""))
    words = named.split() if isinstance(named, str) else named if isinstance(named, list) else None
    if words is None or not all(isinstance(word, str) for word in words):
        raise TokenRefused('invalid token: "scope" must be a string of space-separated scopes')
    scope = max((SCOPE_NAMES[word] for word in words if word in SCOPE_NAMES), default=Scope.NONE)
    scenes = claims.get("scenes")
    if scenes is not None:
        if not isinstance(scenes, list) or not all(isinstance(scene, str) for scene in scenes):
            raise TokenRefused('invalid token: "scenes" must be a list of scene ids')
        scenes = frozenset(scenes)
    return Grant(scope, scenes, float(claims["exp"]))


class TokenVerifier:
    """Turn a bearer token into a :class:`Grant`, or refuse it (:class:`TokenRefused`).

    Parameters
    ----------
    settings : Settings
        ``api_key``, ``jwt_secret``, ``jwt_jwks``, ``jwt_audience``, ``jwt_issuer``.
    """

    def __init__(self, settings: Settings):
        self.api_key = settings.api_key.get_secret_value().encode() if settings.api_key is not None else None
        self.secret = settings.jwt_secret.get_secret_value() if settings.jwt_secret is not None else None
        self.jwks = (JwksKeys(settings.jwt_jwks, settings.jwt_jwks_refresh_seconds)
                     if settings.jwt_jwks is not None else None)
        self.audience = settings.jwt_audience
        self.issuer = settings.jwt_issuer
        self.cache: OrderedDict[str, tuple[Grant, float]] = OrderedDict()
        #: The JWKS read under way: requests that need it wait for the same one.
        self.refreshing: asyncio.Future | None = None

    @property
    def enabled(self) -> bool:
        """Whether requests need a token at all (a key, a secret or a JWKS is set)."""
        return self.api_key is not None or self.secret is not None or self.jwks is not None

    @property
    def signed_tokens(self) -> bool:
        return self.secret is not None or self.jwks is not None

    async def verify(self, token: str) -> Grant:
        """The grant of ``token`` (the API key, or a JWT); :class:`TokenRefused` when it is none."""
        # compare_digest takes as long for a wrong key as for a right one.
        if self.api_key is not None and secrets.compare_digest(token.encode(), self.api_key):
            return ADMIN
        now = time.time()
        cached = self.cache.get(token)
        if cached is not None:
            grant, checked = cached
            if grant.expired(now):
                del self.cache[token]
                raise TokenRefused("the token expired")
            if now - checked < CACHE_SECONDS:
                self.cache.move_to_end(token)
                return grant
        if token.count(".") != 2 or not self.signed_tokens:
            raise TokenRefused("wrong API key" if self.api_key is not None or not self.signed_tokens
                               else "invalid token: not a JWT (header.payload.signature)")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as error:
            raise TokenRefused(f"invalid token: {error}") from None
        algorithm = header.get("alg")
        kid = header.get("kid")
        if self.jwks is not None and algorithm in JWKS_ALGORITHMS and self.jwks.due(kid):
            await self.refresh_jwks(kid)
        grant = grant_from_claims(self.decode(token, algorithm, kid))
        self.cache[token] = (grant, now)
        if len(self.cache) > CACHED_TOKENS:
            self.cache.popitem(last=False)
        return grant

    async def refresh_jwks(self, kid) -> None:
        """Read the JWKS again, off the event loop (a URL may take seconds); concurrent callers
        wait for one read, and :meth:`JwksKeys.refresh` reads at most once per retry interval."""
        refreshing = self.refreshing
        if refreshing is None or refreshing.done():
            refreshing = self.refreshing = asyncio.ensure_future(run_in_threadpool(self.jwks.refresh, kid))
        await asyncio.shield(refreshing)

    def keys_for(self, algorithm, kid) -> list:
        if algorithm in SECRET_ALGORITHMS and self.secret is not None:
            return [self.secret]
        if algorithm in JWKS_ALGORITHMS and self.jwks is not None:
            keys = self.jwks.candidates(kid)
            if not keys:
                raise TokenRefused(f"invalid token: no key with kid {kid!r} in PICK_JWT_JWKS" if kid is not None
                                   else "invalid token: PICK_JWT_JWKS holds no key")
            return keys
        accepted = sorted((SECRET_ALGORITHMS if self.secret is not None else set())
                          | (JWKS_ALGORITHMS if self.jwks is not None else set()))
        raise TokenRefused(f"invalid token: algorithm {algorithm!r} is not accepted here (accepted: "
                           f"{', '.join(accepted)})")

    def decode(self, token: str, algorithm, kid) -> dict:
        """The token's claims, its signature, ``exp``, ``aud`` and ``iss`` checked."""
        options = {"require": ["exp"], "verify_aud": self.audience is not None}
        error = None
        for key in self.keys_for(algorithm, kid):
            try:
                return jwt.decode(token, key, algorithms=[algorithm], audience=self.audience, issuer=self.issuer,
                                  options=options)
            except jwt.InvalidSignatureError as failed:
                error = failed
                continue
            except jwt.ExpiredSignatureError:
                raise TokenRefused("the token expired") from None
            except jwt.MissingRequiredClaimError as failed:
                raise TokenRefused(f'invalid token: it has no "{failed.claim}" claim') from None
            except jwt.InvalidAudienceError:
                raise TokenRefused(f"invalid token: its audience is not {self.audience!r} "
                                   "(PICK_JWT_AUDIENCE)") from None
            except jwt.InvalidIssuerError:
                raise TokenRefused(f"invalid token: its issuer is not {self.issuer!r} (PICK_JWT_ISSUER)") from None
            except jwt.PyJWTError as failed:
                raise TokenRefused(f"invalid token: {failed}") from None
        raise TokenRefused("invalid token: the signature does not verify (signed with another key?)") from error


def mint_token(secret: str, scope: str, scenes: list[str] | None = None, ttl_seconds: float = 3600.0,
               audience: str | None = None, issuer: str | None = None, now: float | None = None) -> str:
    """An HS256 token signed with ``secret`` (``PICK_JWT_SECRET``), as ``python -m service token`` prints.

    Parameters
    ----------
    scope : str
        ``read``, ``edit`` or ``admin`` (space-separated words are kept as given).
    scenes : list of str, optional
        Restrict the token to these scene ids.
    ttl_seconds : float
        Seconds until it expires.
    """
    words = scope.split()
    unknown = [word for word in words if word not in SCOPE_NAMES]
    if not words or unknown:
        raise ValueError(f"scope: one of {', '.join(SCOPE_NAMES)}, got {scope!r}")
    issued = int(time.time() if now is None else now)
    claims = {"scope": " ".join(words), "iat": issued, "exp": issued + int(ttl_seconds)}
    if scenes:
        claims["scenes"] = list(scenes)
    if audience is not None:
        claims["aud"] = audience
    if issuer is not None:
        claims["iss"] = issuer
    return jwt.encode(claims, secret, algorithm="HS256")
