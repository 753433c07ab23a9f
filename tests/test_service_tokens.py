"""Scoped access (issue 39.5): signed tokens (HS256, RS256 and ES256 from a JWKS) beside the API key,
their scopes on every route and on the live channel's messages, and scene restrictions.

The routes are enumerated from the app itself, never listed by hand: a route added later is
checked as soon as it exists.
"""

import http.server
import base64
import hashlib
import hmac
import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from starlette.routing import Mount
from websockets.sync.client import connect

from service.api.auth import Scope, mint_token, required_scope
from service.api.auth.jwks import JwksKeys
from service.api.auth.scopes import LIVE_MESSAGE_SCOPES, QUERY_ACTIONS
from service.settings import Settings
from tests.conftest import TRIANGLE
from tests.test_service_live import LiveServer, closed_with, receive, send

SECRET = "a-test-secret-that-is-long-enough-for-hs256"
API_KEY = "the-admin-key"
AUDIENCE = "bvh-pick-tests"

RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())
#: Not in the JWKS: a token it signs is foreign, even with a kid the JWKS has.
STRANGER_RSA = rsa.generate_private_key(public_exponent=65537, key_size=2048)

PICK = {"origin": [0.2, 0.2, 1], "direction": [0, 0, -1]}
MOVE = [{"id": 0, "transform": [[1, 0, 0, 5], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]}]


def jwks_document() -> dict:
    rsa_jwk = RSAAlgorithm.to_jwk(RSA_KEY.public_key(), as_dict=True)
    ec_jwk = ECAlgorithm.to_jwk(EC_KEY.public_key(), as_dict=True)
    return {"keys": [{**rsa_jwk, "kid": "rsa-1", "use": "sig", "alg": "RS256"},
                     {**ec_jwk, "kid": "ec-1", "use": "sig", "alg": "ES256"}]}


def claims(scope: str, ttl: float = 600, **extra) -> dict:
    now = int(time.time())
    made = {"scope": scope, "iat": now, "exp": now + ttl, "aud": AUDIENCE, **extra}
    return {name: value for name, value in made.items() if value is not None}


def hs256(scope: str, **extra) -> str:
    return jwt.encode(claims(scope, **extra), SECRET, algorithm="HS256")


def rs256(scope: str, key=RSA_KEY, kid="rsa-1", **extra) -> str:
    return jwt.encode(claims(scope, **extra), key, algorithm="RS256", headers={"kid": kid})


def es256(scope: str, **extra) -> str:
    return jwt.encode(claims(scope, **extra), EC_KEY, algorithm="ES256", headers={"kid": "ec-1"})


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def jwks_file(tmp_path):
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(jwks_document()))
    return path


@pytest.fixture
def secured(make_client, jwks_file):
    """A client of an app that takes the key, HS256 tokens and the JWKS's, for this audience."""
    return make_client(api_key=API_KEY, jwt_secret=SECRET, jwt_jwks=str(jwks_file), jwt_audience=AUDIENCE)


def new_scene(client) -> str:
    created = client.post("/scenes", json={"meshes": [{"name": "tri", **TRIANGLE}]}, headers=bearer(API_KEY))
    assert created.status_code == 201, created.text
    return created.json()["id"]


# ------------------------------------------------------------------ the routes of the app

def app_routes(app) -> list[tuple[str, str]]:
    """``(method, path template)`` of every route the app serves, a WebSocket as ``GET``, a mount of
    static files as ``GET`` of ``<path>/{path}``: walked from the app's router through every router
    it includes."""
    found = []

    def walk(routes):
        for route in routes:
            original = getattr(route, "original_router", None)
            if original is not None:
                walk(original.routes)
            elif isinstance(route, Mount):
                found.append(("GET", route.path + "/{path}"))
            elif getattr(route, "methods", None):
                found.extend((method, route.path_format) for method in sorted(route.methods) if method != "HEAD")
            else:
                found.append(("GET", route.path_format))
    walk(app.router.routes)
    return sorted(set(found))


#: A value for each path parameter of the routes (the scene's is the test's scene).
PATH_VALUES = {"object_id": "0", "mesh_id": "0", "name": "viewer.js", "path": "swagger-ui.css"}


def concrete(template: str, scene_id: str) -> str:
    return re.sub(r"\{(\w+)(:\w+)?\}", lambda match: scene_id if match[1] == "scene_id" else PATH_VALUES[match[1]],
                  template)


def test_every_route_has_a_scope_and_the_document_says_it(secured):
    routes = app_routes(secured.app)
    scopes = {route: required_scope(*route) for route in routes}
    assert all(scope in (Scope.READ, Scope.EDIT, Scope.ADMIN) for scope in scopes.values())
    # The rule reads raw paths: a POST whose last segment is a path parameter could pass for a query.
    for method, path in routes:
        assert not (method == "POST" and path.endswith("}")), (method, path)
    # Every query name the rule knows is a route's, and the scene-changing resources' writes are edits.
    posted = {path.rsplit("/", 1)[-1].removesuffix(".bin") for method, path in routes if method == "POST"}
    assert QUERY_ACTIONS <= posted
    document = secured.get("/openapi.json", headers=bearer(API_KEY)).json()
    documented = 0
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            if path in ("/health", "/ready"):
                assert "x-scopes" not in operation
                continue
            needed = required_scope(method.upper(), path)
            tags = set(operation.get("tags", ()))
            if method in ("post", "put", "patch", "delete") and tags & {"scenes", "objects"}:
                assert needed >= Scope.EDIT, (method, path)
            assert operation["x-scopes"] == [scope.label for scope in Scope if scope >= needed > Scope.NONE]
            assert "403" in operation["responses"]
            documented += 1
    counts = {scope.label: sum(1 for value in scopes.values() if value is scope) for scope in Scope}
    print(f"\n{len(routes)} routes: {counts}; {documented} operations documented with x-scopes")
    assert counts["edit"] >= 6 and counts["admin"] == 2 and documented >= 20


def test_a_read_token_is_refused_on_every_edit_route_and_admits_every_read(secured):
    scene_id = new_scene(secured)
    before = secured.get(f"/scenes/{scene_id}", headers=bearer(API_KEY)).json()
    read = bearer(hs256("read"))
    refused = admitted = 0
    for method, template in app_routes(secured.app):
        path = concrete(template, scene_id)
        needed = required_scope(method, template)
        if template.endswith("/live"):
            continue  # the WebSocket: its messages are tested below
        response = secured.request(method, path, json={}, headers=read)
        if needed > Scope.READ:
            assert response.status_code == 403, (method, template, response.status_code)
            assert response.json() == {"detail": f'this token lacks the "{needed.label}" scope'}
            refused += 1
        else:
            assert response.status_code not in (401, 403), (method, template, response.text)
            admitted += 1
    after = secured.get(f"/scenes/{scene_id}", headers=bearer(API_KEY)).json()
    assert after == before
    print(f"\nread token: {refused} of {refused} edit and admin routes refused 403; {admitted} read routes admitted")
    assert refused >= 8 and admitted >= 20


def test_an_edit_token_edits_but_cannot_delete_and_an_admin_can(secured):
    scene_id = new_scene(secured)
    edit = bearer(rs256("edit"))
    moved = secured.patch(f"/scenes/{scene_id}/objects", json=MOVE, headers=edit)
    assert moved.status_code == 200, moved.text
    added = secured.post(f"/scenes/{scene_id}/objects", json={"mesh": 0}, headers=edit)
    assert added.status_code == 201
    added_id = added.json()["objects"][0]["id"]
    assert secured.delete(f"/scenes/{scene_id}/objects/{added_id}", headers=edit).status_code == 204
    assert secured.post("/scenes", json={"meshes": [TRIANGLE]}, headers=edit).status_code == 201
    admin_routes = [(method, template) for method, template in app_routes(secured.app)
                    if required_scope(method, template) is Scope.ADMIN]
    assert ("DELETE", "/scenes/{scene_id}") in admin_routes and ("GET", "/metrics") in admin_routes
    for method, template in admin_routes:
        response = secured.request(method, concrete(template, scene_id), headers=edit)
        assert response.status_code == 403 and response.json()["detail"] == 'this token lacks the "admin" scope'
    assert secured.get(f"/scenes/{scene_id}", headers=edit).status_code == 200
    for admin in (hs256("admin"), es256("admin"), API_KEY):
        assert secured.get("/metrics", headers=bearer(admin)).status_code == 200
    assert secured.delete(f"/scenes/{scene_id}", headers=bearer(es256("admin"))).status_code == 204
    assert secured.get(f"/scenes/{scene_id}", headers=bearer(API_KEY)).status_code == 404


def test_rs256_and_es256_tokens_from_the_jwks(secured):
    scene_id = new_scene(secured)
    for token in (rs256("read"), es256("read")):
        response = secured.post(f"/scenes/{scene_id}/pick", json=PICK, headers=bearer(token))
        assert response.status_code == 200 and response.json()["hit"] is True
        assert secured.patch(f"/scenes/{scene_id}/objects", json=MOVE, headers=bearer(token)).status_code == 403
    for token in (rs256("read edit"), es256("edit")):
        assert secured.patch(f"/scenes/{scene_id}/objects", json=MOVE, headers=bearer(token)).status_code == 200


def hmac_signed(payload: dict, key: str, kid: str | None, algorithm: str = "HS256") -> str:
    """A JWT signed by hand (PyJWT refuses to sign with a public key as a secret, as an attacker would)."""
    def encoded(part: bytes) -> str:
        return base64.urlsafe_b64encode(part).rstrip(b"=").decode()

    header = {"alg": algorithm, "typ": "JWT", **({"kid": kid} if kid else {})}
    signing_input = f"{encoded(json.dumps(header).encode())}.{encoded(json.dumps(payload).encode())}"
    digest = hashlib.sha256 if algorithm == "HS256" else hashlib.sha512
    return f"{signing_input}.{encoded(hmac.new(key.encode(), signing_input.encode(), digest).digest())}"


def foreign_tokens() -> dict[str, str]:
    """Tokens the service must refuse with 401, and why."""
    now = int(time.time())
    signed_elsewhere = jwt.encode(claims("admin"), "another-secret-just-as-long-as-ours-is!!", algorithm="HS256")
    header, payload, signature = hs256("read").split(".")
    raised = jwt.encode(claims("admin"), SECRET, algorithm="HS256").split(".")[1]
    return {
        "HS256 signed with another secret": signed_elsewhere,
        "RS256 signed by a key not in the JWKS, with the JWKS's kid": rs256("admin", key=STRANGER_RSA),
        "RS256 with a kid the JWKS lacks": rs256("admin", key=STRANGER_RSA, kid="rsa-unknown"),
        "ES256 signed by another key": jwt.encode(claims("admin"), ec.generate_private_key(ec.SECP256R1()),
                                                  algorithm="ES256", headers={"kid": "ec-1"}),
        "expired HS256": hs256("admin", ttl=-5),
        "expired RS256": rs256("admin", ttl=-5),
        "expired ES256": es256("admin", ttl=-5),
        "wrong audience": jwt.encode(claims("admin", aud="someone-else"), SECRET, algorithm="HS256"),
        "no audience": jwt.encode({"scope": "admin", "exp": now + 600}, SECRET, algorithm="HS256"),
        "no expiry": jwt.encode({"scope": "admin", "aud": AUDIENCE}, SECRET, algorithm="HS256"),
        "payload raised to admin": f"{header}.{raised}.{signature}",
        "alg none": jwt.encode(claims("admin"), None, algorithm="none"),
        "HS256 keyed with the JWKS's public key": hmac_signed(claims("admin"), json.dumps(jwks_document()["keys"][0]),
                                                               "rsa-1"),
        "HS512": hmac_signed(claims("admin"), SECRET, None, "HS512"),
        "not yet valid": hs256("admin", nbf=now + 600),
        "scenes not a list": hs256("admin", scenes="all"),
        "not a JWT": "not-a-token",
    }


def test_foreign_signed_expired_and_wrong_audience_tokens_are_401(secured):
    scene_id = new_scene(secured)
    tokens = foreign_tokens()
    for why, token in tokens.items():
        for method, path in (("GET", "/scenes"), ("POST", f"/scenes/{scene_id}/pick"), ("GET", "/metrics")):
            response = secured.request(method, path, json=PICK, headers=bearer(token))
            assert response.status_code == 401, (why, path, response.text)
            assert response.headers["www-authenticate"].startswith("Bearer"), why
    details = {why: secured.get("/scenes", headers=bearer(token)).json()["detail"] for why, token in tokens.items()}
    assert details["expired HS256"] == details["expired ES256"] == "the token expired"
    assert details["wrong audience"] == f"invalid token: its audience is not {AUDIENCE!r} (PICK_JWT_AUDIENCE)"
    assert details["no expiry"] == 'invalid token: it has no "exp" claim'
    assert details["RS256 with a kid the JWKS lacks"] == "invalid token: no key with kid 'rsa-unknown' in PICK_JWT_JWKS"
    assert "signature does not verify" in details["HS256 signed with another secret"]
    assert "not accepted" in details["alg none"] and "not accepted" in details["HS512"]
    assert "signature does not verify" in details["HS256 keyed with the JWKS's public key"]
    print(f"\n{len(tokens)} kinds of foreign, expired or malformed tokens: all 401 on 3 routes")


def test_a_token_that_expires_while_cached_is_refused(make_client):
    client = make_client(jwt_secret=SECRET)
    token = jwt.encode({"scope": "read", "exp": int(time.time()) + 2}, SECRET, algorithm="HS256")
    assert client.get("/scenes", headers=bearer(token)).status_code == 200
    time.sleep(max(0.0, jwt.decode(token, options={"verify_signature": False})["exp"] - time.time()) + 0.1)
    response = client.get("/scenes", headers=bearer(token))
    assert response.status_code == 401 and response.json()["detail"] == "the token expired"


def test_scene_restricted_tokens(secured):
    mine, other = new_scene(secured), new_scene(secured)
    read = bearer(hs256("read", scenes=[mine]))
    listed = secured.get("/scenes", headers=read).json()["scenes"]
    assert [scene["id"] for scene in listed] == [mine]
    assert len(secured.get("/scenes", headers=bearer(hs256("read"))).json()["scenes"]) >= 2
    assert secured.post(f"/scenes/{mine}/pick", json=PICK, headers=read).status_code == 200
    for method, path in (("GET", f"/scenes/{other}"), ("POST", f"/scenes/{other}/pick"),
                         ("GET", f"/scenes/{other}/export.glb")):
        response = secured.request(method, path, json=PICK, headers=read)
        assert response.status_code == 403
        assert response.json()["detail"] == (f"this token may not touch scene {other!r}: it is restricted to the "
                                             f"scenes {mine}")
    # A scene-restricted token cannot make a scene: it could not reach it afterwards.
    edit = bearer(hs256("edit", scenes=[mine]))
    response = secured.post("/scenes", json={"meshes": [TRIANGLE]}, headers=edit)
    assert response.status_code == 403
    assert response.json()["detail"] == f"this token is restricted to the scenes {mine}: it cannot create a scene"
    assert secured.patch(f"/scenes/{mine}/objects", json=MOVE, headers=edit).status_code == 200
    assert secured.patch(f"/scenes/{other}/objects", json=MOVE, headers=edit).status_code == 403
    admin = bearer(es256("admin", scenes=[mine]))
    assert secured.delete(f"/scenes/{other}", headers=admin).status_code == 403
    assert secured.delete(f"/scenes/{mine}", headers=admin).status_code == 204
    assert secured.get(f"/scenes/{other}", headers=bearer(API_KEY)).status_code == 200


def test_a_token_without_any_of_the_scopes_reads_nothing_and_scp_is_read_too(secured):
    scene_id = new_scene(secured)
    response = secured.get(f"/scenes/{scene_id}", headers=bearer(hs256("openid profile")))
    assert response.status_code == 403 and response.json()["detail"] == 'this token lacks the "read" scope'
    provider = bearer(rs256(None, scp=["openid", "edit"]))
    assert secured.patch(f"/scenes/{scene_id}/objects", json=MOVE, headers=provider).status_code == 200


def test_a_short_secret_is_refused():
    with pytest.raises(ValueError, match="at least 32 bytes"):
        Settings(jwt_secret="short")
    assert Settings(host="0.0.0.0", jwt_secret=SECRET).open_to_the_network() is None


# ------------------------------------------------------------------ the live channel

@pytest.fixture(scope="module")
def live(tmp_path_factory):
    jwks = tmp_path_factory.mktemp("jwks") / "jwks.json"
    jwks.write_text(json.dumps(jwks_document()))
    running = LiveServer(tmp_path_factory.mktemp("tokens") / "data", api_key=API_KEY, jwt_secret=SECRET,
                         jwt_jwks=str(jwks), jwt_audience=AUDIENCE)
    yield running
    running.stop()


#: The live channel's edit messages a read token sends: each kind of entry of the batch.
LIVE_EDITS = [
    {"type": "edit", "id": "move", "objects": MOVE},
    {"type": "edit", "id": "rename", "objects": [{"id": 0, "name": "renamed"}]},
    {"type": "edit", "id": "hide", "objects": [{"id": 0, "pickable": False}]},
    {"type": "edit", "id": "mask", "objects": [{"id": 0, "mask": 2}]},
    {"type": "edit", "id": "everything", "objects": [{"id": 0, "transform": MOVE[0]["transform"], "name": "x",
                                                      "pickable": True, "mask": 1}]},
    {"type": "edit", "id": "invalid", "objects": "not a list"},
]


@pytest.mark.parametrize("by", ["header", "first message"])
@pytest.mark.parametrize("sign", [hs256, rs256, es256])
def test_live_edit_messages_on_a_read_token_are_403_and_the_connection_stays(live, by, sign):
    scene_id = live.scene()
    token = sign("read")
    headers = bearer(token) if by == "header" else {}
    with connect(live.url(scene_id), additional_headers=headers) as ws:
        if by == "first message":
            send(ws, {"type": "auth", "key": token})
        hello = receive(ws)
        assert hello["type"] == "hello"
        for message in LIVE_EDITS:
            send(ws, message)
            assert receive(ws) == {"type": "error", "id": message["id"], "status": 403,
                                   "detail": 'this token lacks the "edit" scope'}
        send(ws, {"type": "pick", "id": 1, **PICK})
        assert receive(ws)["result"]["object"] == {"id": 0, "name": "tri"}
    assert live.http.get(f"/scenes/{scene_id}/objects").json()["version"] == hello["version"]


def test_live_edit_messages_on_an_edit_token_apply(live):
    scene_id = live.scene()
    with connect(live.url(scene_id), additional_headers=bearer(es256("edit"))) as ws:
        assert receive(ws)["type"] == "hello"
        send(ws, {"type": "edit", "id": 7, "objects": MOVE})
        answer = receive(ws)
        assert answer["type"] == "edit" and answer["result"]["count"] == 1, answer


def test_live_scene_restriction_and_refused_tokens_at_connect(live):
    mine, other = live.scene(), live.scene()
    restricted = hs256("read", scenes=[mine])
    with connect(live.url(mine), additional_headers=bearer(restricted)) as ws:
        assert receive(ws)["type"] == "hello"
    detail = f"this token may not touch scene {other!r}: it is restricted to the scenes {mine}"
    with connect(live.url(other), additional_headers=bearer(restricted)) as ws:
        assert receive(ws) == {"type": "error", "id": None, "status": 403, "detail": detail}
        assert closed_with(ws)[0] == 1008
    with connect(live.url(other)) as ws:
        send(ws, {"type": "auth", "key": restricted})
        assert receive(ws) == {"type": "error", "id": None, "status": 403, "detail": detail}
        assert closed_with(ws)[0] == 1008
    for token in (hs256("read", ttl=-5), rs256("read", key=STRANGER_RSA), "nonsense"):
        with connect(live.url(mine)) as ws:
            send(ws, {"type": "auth", "key": token})
            assert receive(ws)["status"] == 401
            assert closed_with(ws)[0] == 1008
        with connect(live.url(mine), additional_headers=bearer(token)) as ws:
            assert receive(ws)["status"] == 401
            assert closed_with(ws)[0] == 1008


def test_a_live_connection_whose_token_expires_is_closed(live):
    scene_id = live.scene()
    token = hs256("read", ttl=2)
    with connect(live.url(scene_id), additional_headers=bearer(token)) as ws:
        assert receive(ws)["type"] == "hello"
        # Nothing sent: the server closes the connection when the token expires.
        error = receive(ws, timeout=10)
        assert time.time() >= jwt.decode(token, options={"verify_signature": False})["exp"]
        assert error["status"] == 401 and error["detail"] == "the token expired: connect again with a new one"
        assert closed_with(ws)[0] == 1008


def test_every_live_message_kind_has_a_scope():
    assert set(LIVE_MESSAGE_SCOPES) == {"pick", "batch_options", "binary", "edit"}
    assert LIVE_MESSAGE_SCOPES["edit"] is Scope.EDIT


# ------------------------------------------------------------------ a JWKS from a URL

class JwksServer:
    """A JWKS served over HTTP on a free port, counting its fetches."""

    def __init__(self, document: dict):
        self.document = document
        self.fetches = 0
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                owner.fetches += 1
                body = json.dumps(owner.document).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/.well-known/jwks.json"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()


def test_a_jwks_url_is_fetched_cached_and_refreshed_within_bounds(make_client):
    document = jwks_document()
    rotated = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    served = JwksServer({"keys": document["keys"][:1]})
    try:
        client = make_client(jwt_jwks=served.url)
        keys = client.app.state.token_verifier.jwks
        keys.retry_seconds = 60.0
        scene_id = new_scene_with(client, bearer(rs256("edit", aud=None)))
        for _ in range(20):
            assert client.post(f"/scenes/{scene_id}/pick", json=PICK, headers=bearer(rs256("read", aud=None,
                                                                                            jti=uuid.uuid4().hex))
                               ).status_code == 200
        assert served.fetches == 1

        def flood() -> float:
            started = time.monotonic()
            for number in range(50):
                response = client.get("/scenes", headers=bearer(rs256("read", key=rotated, kid=f"made-up-{number}",
                                                                      aud=None)))
                assert response.status_code == 401
            return time.monotonic() - started

        # Tokens with made-up kids: no early read within the retry interval, then one per interval.
        flood()
        assert served.fetches == 1
        keys.retry_seconds = 0.2
        time.sleep(0.25)
        elapsed = flood()
        assert 2 <= served.fetches <= 2 + elapsed / keys.retry_seconds
        # The provider rotates in a new key: a token naming it is accepted after the retry interval.
        served.document = {"keys": [*document["keys"][:1], {**RSAAlgorithm.to_jwk(rotated.public_key(),
                                                                                 as_dict=True), "kid": "rsa-2"}]}
        time.sleep(keys.retry_seconds + 0.05)
        token = rs256("read", key=rotated, kid="rsa-2", aud=None)
        assert client.get("/scenes", headers=bearer(token)).status_code == 200
    finally:
        served.stop()


def new_scene_with(client, headers) -> str:
    created = client.post("/scenes", json={"meshes": [{"name": "tri", **TRIANGLE}]}, headers=headers)
    assert created.status_code == 201, created.text
    return created.json()["id"]


def test_an_unreachable_jwks_keeps_the_keys_held(tmp_path):
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(jwks_document()))
    keys = JwksKeys(str(path), refresh_seconds=0.01, retry_seconds=0.0)
    keys.refresh("rsa-1")
    assert [key.key_id for key in keys.candidates("rsa-1")] == ["rsa-1"]
    path.write_text("{not json")
    time.sleep(0.02)
    keys.refresh("rsa-1")
    assert [key.key_id for key in keys.candidates("rsa-1")] == ["rsa-1"]


# ------------------------------------------------------------------ minting

def test_python_m_service_token_mints_a_token_the_service_accepts(make_client, tmp_path):
    environment = {**os.environ, "PICK_JWT_SECRET": SECRET, "PICK_DATA_DIR": str(tmp_path)}
    minted = subprocess.run([sys.executable, "-m", "service", "token", "--scope", "read", "--scene", "abc",
                             "--scene", "def", "--ttl", "120"], capture_output=True, text=True, env=environment,
                            timeout=120)
    assert minted.returncode == 0, minted.stderr
    token = minted.stdout.strip()
    decoded = jwt.decode(token, SECRET, algorithms=["HS256"])
    assert decoded["scope"] == "read" and decoded["scenes"] == ["abc", "def"]
    assert decoded["exp"] - decoded["iat"] == 120 and decoded["exp"] > time.time()
    client = make_client(jwt_secret=SECRET)
    assert client.get("/scenes", headers=bearer(token)).json() == {"scenes": []}
    assert client.post("/scenes", json={"meshes": [TRIANGLE]}, headers=bearer(token)).status_code == 403
    missing = subprocess.run([sys.executable, "-m", "service", "token", "--scope", "read"], capture_output=True,
                             text=True, env={**environment, "PICK_JWT_SECRET": ""}, timeout=120)
    assert missing.returncode == 2 and "PICK_JWT_SECRET is not set" in missing.stderr
    with pytest.raises(ValueError, match="scope"):
        mint_token(SECRET, "write")
