"""Clients that hang up mid-body: a real uvicorn server, real sockets that send the headers and
part of the body, then close. Each hang-up is the client's: counted with status 499 in
``/metrics``, logged at INFO, never a 500 or an "unexpected error" with a traceback."""

import logging
import re
import socket
import threading
import time

import httpx
import numpy as np
import pytest
import uvicorn

from service.settings import Settings
from tests.conftest import TRIANGLE

BOUNDARY = "hangup-boundary"


class Server:
    """``create_app`` served by uvicorn on a free loopback port, on a thread of this process."""

    def __init__(self, data_dir):
        from service.app import create_app

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(create_app(Settings(data_dir=data_dir, warm_up=False)),
                                                    log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=600)
        deadline = time.monotonic() + 600
        while True:
            try:
                if self.http.get("/ready").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not become ready"
            time.sleep(0.02)

    def hang_up(self, method: str, path: str, content_type: str, body: bytes) -> None:
        """Send the request line, the headers (the whole body's length) and half the body; then close."""
        head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        with socket.create_connection(("127.0.0.1", self.port)) as sock:
            sock.sendall(head + body[:len(body) // 2])
            # Let the server start reading the body before the close.
            time.sleep(0.2)

    def counted(self, method: str, route: str) -> dict[str, float]:
        """``pick_http_requests_total`` of one route, by status."""
        text = self.http.get("/metrics").text
        pattern = re.compile(r'^pick_http_requests_total\{method="%s",route="%s",status="(\d+)"\} (\S+)$'
                             % (re.escape(method), re.escape(route)), re.M)
        return {status: float(count) for status, count in pattern.findall(text)}

    def stop(self) -> None:
        self.http.close()
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    running = Server(tmp_path_factory.mktemp("hangups") / "data")
    yield running
    running.stop()


def multipart(name: str, content: bytes) -> bytes:
    return (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
            f"Content-Type: application/octet-stream\r\n\r\n").encode() + content + f"\r\n--{BOUNDARY}--\r\n".encode()


def obj_text(copies: int) -> bytes:
    return b"".join(b"v 0 0 %d\nv 1 0 %d\nv 0 1 %d\n" % (i, i, i) for i in range(copies)) + b"f 1 2 3\n"


RAYS = np.tile(np.array([[0.2, 0.2, 1, 0, 0, -1]], "<f4"), (20_000, 1)).tobytes()
POINTS = np.tile(np.array([[0.2, 0.2, 1]], "<f4"), (20_000, 1)).tobytes()
MOVES = (np.zeros(4_000, np.dtype([("id", "<i4"), ("rows", "<f4", (3, 4))]))).tobytes()
OCTETS = "application/octet-stream"
FORM = f"multipart/form-data; boundary={BOUNDARY}"

#: (method, path as sent, route template as counted, content type, body) of every route that reads
#: a binary or multipart body, and of the two routes that read JSON without FastAPI's solver.
HANGUPS = [
    ("POST", "/scenes/{id}/pick/batch.bin", "/scenes/{scene_id}/pick/batch.bin", OCTETS, RAYS),
    ("POST", "/scenes/{id}/closest.bin", "/scenes/{scene_id}/closest.bin", OCTETS, POINTS),
    ("POST", "/scenes/{id}/sphere-cast.bin?radius=0.1", "/scenes/{scene_id}/sphere-cast.bin", OCTETS, RAYS),
    ("POST", "/scenes/{id}/contains.bin", "/scenes/{scene_id}/contains.bin", OCTETS, POINTS),
    ("POST", "/scenes/upload", "/scenes/upload", FORM, multipart("big.obj", obj_text(20_000))),
    ("POST", "/scenes/{id}/objects/upload", "/scenes/{scene_id}/objects/upload", FORM,
     multipart("big.obj", obj_text(20_000))),
    ("PUT", "/scenes/{id}/meshes/0/vertices.bin", "/scenes/{scene_id}/meshes/{mesh_id}/vertices.bin", OCTETS,
     np.zeros((30_000, 3), "<f4").tobytes()),
    ("PATCH", "/scenes/{id}/objects.bin", "/scenes/{scene_id}/objects.bin", OCTETS, MOVES),
    ("POST", "/scenes/{id}/pick", "/scenes/{scene_id}/pick", "application/json",
     b'{"origin": [0.2, 0.2, 1], "direction": [0, 0, -1]}' + b" " * 200_000),
    ("PATCH", "/scenes/{id}/objects/0", "/scenes/{scene_id}/objects/{object_id}", "application/json",
     b'{"name": "x"}' + b" " * 200_000),
]


@pytest.mark.parametrize("method, path, route, content_type, body", HANGUPS, ids=[f"{m} {r}" for m, _, r, _, _
                                                                                    in HANGUPS])
def test_a_client_hanging_up_mid_body_is_counted_499_and_logged_at_info(server, caplog, method, path, route,
                                                                        content_type, body):
    created = server.http.post("/scenes", json={"meshes": [{"name": "tri", **TRIANGLE}]})
    assert created.status_code == 201, created.text
    scene = created.json()["id"]
    before = server.counted(method, route)
    caplog.set_level(logging.INFO)
    server.hang_up(method, path.replace("{id}", scene), content_type, body)
    deadline = time.monotonic() + 30
    while (after := server.counted(method, route)).get("499", 0.0) <= before.get("499", 0.0):
        assert time.monotonic() < deadline, f"no 499 counted for {method} {route}: {after}"
        time.sleep(0.05)
    assert after.get("500", 0.0) == before.get("500", 0.0) == 0.0
    assert sum(after.values()) == sum(before.values()) + 1, (before, after)
    hung_up = [record for record in caplog.records if "hung up" in record.getMessage()]
    assert hung_up and all(record.levelno == logging.INFO for record in hung_up)
    assert not [record for record in caplog.records if record.levelno >= logging.WARNING], \
        [record.getMessage() for record in caplog.records]
    # The server goes on serving.
    assert server.http.post(f"/scenes/{scene}/pick", json={"origin": [0.2, 0.2, 1],
                                                           "direction": [0, 0, -1]}).json()["hit"] is True
