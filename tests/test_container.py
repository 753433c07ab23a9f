"""The container, built and run by a Docker engine (``make test-container``).

The Dockerfile is built as it is (``docker build``), on ``python:3.11-slim``
when an image registry answers and otherwise on a base image made from
Debian's packages by ``docker/debian-base-image.sh`` (kept, tagged
:data:`DEBIAN_BASE`, for the next run). Then the image is run as a user
would: with a key and a volume, reached through its port (``--network host``:
the engine here is started without a bridge), killed with SIGKILL and
started again on the same volume, and without a key, which it must refuse.

When no engine answers, the engine fixture starts ``dockerd`` (root and
Debian's ``docker.io`` needed; ``.ci/run`` installs it) with the vfs storage
driver, which works inside a container, and stops it afterwards. The build
time and the time to ``/ready`` are printed (run with ``-s`` to see them).
"""

import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.container

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
BASE_SCRIPT = ROOT / "docker" / "debian-base-image.sh"

#: The image the tests build (retagged by each build; the one it replaces is removed).
IMAGE = "bvh-pick:container-test"
#: The base image made from Debian's packages when no registry answers; made once, then reused.
DEBIAN_BASE = "bvh-pick-base:bookworm"
#: The engine this module starts when none answers: no bridge and no iptables (containers run
#: with --network host), vfs because overlayfs does not stack inside a container.
DOCKERD_ARGS = ("--storage-driver=vfs", "--iptables=false", "--bridge=none")
#: The user the Dockerfile's USER names.
SERVICE_UID = 10001

#: Time for /ready after ``docker run``: far less than the minutes numba needs to compile
#: the kernels, so passing it shows they came from the image's cache.
READY_TIMEOUT = 60.0
#: A build takes some 3 minutes on an idle 2-core machine (4-6 with a base image to make);
#: the bound is for a machine shared with other work, where the kernels' warm-up takes longer.
BUILD_TIMEOUT = 45 * 60.0
DEBOOTSTRAP_TIMEOUT = 15 * 60.0

#: Names of everything this run creates in the engine, so that it removes exactly those.
RUN_ID = f"bvh-pick-test-{uuid.uuid4().hex[:8]}"


def docker(*arguments: str, timeout: float = 120.0, check: bool = True, **options) -> subprocess.CompletedProcess:
    """``docker ARGUMENTS...`` with its output as text; fails the test unless it succeeds, when ``check``."""
    try:
        done = subprocess.run(["docker", *arguments], capture_output=True, text=True, timeout=timeout, **options)
    except subprocess.TimeoutExpired as expired:
        output = expired.stdout or b""
        output = (output.decode(errors="replace") if isinstance(output, bytes) else output)[-3000:]
        pytest.fail(f"docker {' '.join(arguments)} did not finish within {timeout:.0f} s:\n{output}")
    if check and done.returncode != 0:
        pytest.fail(f"docker {' '.join(arguments)} exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return done


def _engine_answers() -> bool:
    return docker("info", "--format", "{{.ServerVersion}}", check=False, timeout=30).returncode == 0


def _image_id(name: str) -> str | None:
    found = docker("image", "inspect", "--format", "{{.Id}}", name, check=False)
    return found.stdout.strip() if found.returncode == 0 else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _tail(path: Path, characters: int = 3000) -> str:
    return path.read_text(errors="replace")[-characters:] if path.exists() else ""


# ------------------------------------------------------------------ the engine and the image
@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    """A Docker engine that answers: the one running, or a ``dockerd`` started (and stopped) here."""
    if shutil.which("docker") is None:
        pytest.skip("the docker client is not installed (Debian: apt-get install docker.io)")
    if _engine_answers():
        yield
        return
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        pytest.skip("no Docker engine answers (`docker info` fails) and dockerd is not installed to start one "
                    "(Debian: apt-get install docker.io)")
    if os.geteuid() != 0:
        pytest.skip(f"no Docker engine answers (`docker info` fails) and dockerd needs root to start one "
                    f"(this is uid {os.geteuid()})")
    log = tmp_path_factory.mktemp("dockerd") / "dockerd.log"
    with open(log, "w") as out:
        process = subprocess.Popen([dockerd, *DOCKERD_ARGS], stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not _engine_answers():
            if process.poll() is not None:
                pytest.skip(f"dockerd {' '.join(DOCKERD_ARGS)} could not run here (exit {process.returncode}):\n"
                            f"{_tail(log, 1500)}")
            if time.monotonic() > deadline:
                pytest.fail(f"dockerd started but did not answer within 60 s:\n{_tail(log)}")
            time.sleep(0.5)
        print(f"\n[container] started dockerd {' '.join(DOCKERD_ARGS)} (pid {process.pid})", flush=True)
        yield
    finally:
        # SIGTERM: dockerd stops its containers and its containerd, and removes its pid file and
        # socket, so that the next run finds no engine and starts one again.
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def base_image(engine):
    """The Dockerfile's default base when present or pullable, else :data:`DEBIAN_BASE` (made once)."""
    default = re.search(r"^ARG BASE_IMAGE=(\S+)$", DOCKERFILE.read_text(), re.M).group(1)
    if _image_id(default):
        return default
    pulled = docker("pull", default, check=False, timeout=600)
    if pulled.returncode == 0:
        return default
    if _image_id(DEBIAN_BASE):
        print(f"\n[container] no registry answers; base image {DEBIAN_BASE} from an earlier run", flush=True)
        return DEBIAN_BASE
    why = pulled.stderr.strip().splitlines()[-1] if pulled.stderr.strip() else f"exit {pulled.returncode}"
    if shutil.which("debootstrap") is None:
        pytest.skip(f"no image registry answers (docker pull {default}: {why}) and debootstrap is not installed "
                    f"to make a base image from Debian's packages (Debian: apt-get install debootstrap)")
    started = time.perf_counter()
    made = subprocess.run([str(BASE_SCRIPT), DEBIAN_BASE], capture_output=True, text=True,
                          timeout=DEBOOTSTRAP_TIMEOUT)
    assert made.returncode == 0, f"{BASE_SCRIPT.name} exited {made.returncode}:\n{made.stdout[-3000:]}{made.stderr[-3000:]}"
    print(f"\n[container] no registry answers ({why}); made {DEBIAN_BASE} from Debian's packages in "
          f"{time.perf_counter() - started:.0f} s", flush=True)
    return DEBIAN_BASE


@pytest.fixture(scope="module")
def image(base_image):
    """The Dockerfile built on ``base_image`` as :data:`IMAGE` (the engine's layer cache applies)."""
    replaced = _image_id(IMAGE)
    started = time.perf_counter()
    # The classic builder: Debian's docker.io has no buildx, and it takes --network host as it is;
    # --force-rm: a failed step leaves no container behind either.
    built = docker("build", "--force-rm", "--network", "host", "--build-arg", f"BASE_IMAGE={base_image}", "--tag", IMAGE,
                   str(ROOT), check=False, timeout=BUILD_TIMEOUT, env={**os.environ, "DOCKER_BUILDKIT": "0"})
    seconds = time.perf_counter() - started
    assert built.returncode == 0, f"docker build exited {built.returncode}:\n{built.stdout[-4000:]}{built.stderr[-3000:]}"
    steps = len(re.findall(r"^Step \d+/\d+ :", built.stdout, re.M))
    cached = built.stdout.count("---> Using cache")
    print(f"\n[container] docker build on {base_image}: {seconds:.0f} s ({steps} steps, {cached} from the "
          f"engine's cache)", flush=True)
    if replaced and replaced != _image_id(IMAGE):
        docker("rmi", replaced, check=False)  # the previous build's layers, unless something still uses them
    return IMAGE


@pytest.fixture
def engine_objects(engine):
    """Names for containers and volumes of this test; whatever was created under them is removed after."""
    created = {"containers": [], "volumes": []}

    def name(kind: str) -> str:
        named = f"{RUN_ID}-{kind[:-1]}-{len(created[kind]) + 1}"
        created[kind].append(named)
        return named

    yield name
    for container in created["containers"]:
        docker("rm", "--force", "--volumes", container, check=False)
    for volume in created["volumes"]:
        docker("volume", "rm", "--force", volume, check=False)


# ------------------------------------------------------------------ talking to the service
def call(port: int, method: str, path: str, body=None, key: str | None = None) -> tuple[int, object]:
    """An HTTP request to the service on ``port``: (status, JSON answer or text)."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode())
    if body is not None:
        request.add_header("Content-Type", "application/json")
    if key is not None:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors="replace")


def _reachable(port: int, path: str) -> int | None:
    try:
        return call(port, "GET", path)[0]
    except (urllib.error.URLError, OSError):
        return None


def start_service(name: str, volume: str, port: int, key: str, *options: str) -> float:
    """``docker run`` the image with ``key`` on ``port`` and ``volume`` at /data; seconds until /ready answers 200."""
    started = time.perf_counter()
    docker("run", "--detach", "--name", name, "--network", "host", "--volume", f"{volume}:/data",
           "--env", f"PICK_PORT={port}", "--env", f"PICK_API_KEY={key}", *options, IMAGE)
    while _reachable(port, "/ready") != 200:
        state = docker("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", name).stdout.split()
        if state[0] != "running":
            pytest.fail(f"the container {state[0]} (exit {state[1]}) before /ready:\n"
                        f"{docker('logs', name, check=False).stderr[-3000:]}")
        if time.perf_counter() - started > READY_TIMEOUT:
            pytest.fail(f"no 200 from /ready within {READY_TIMEOUT:.0f} s of docker run (were the kernels "
                        f"compiled again?):\n{docker('logs', name, check=False).stderr[-3000:]}")
        time.sleep(0.1)
    return time.perf_counter() - started


#: Two triangles: the unit square z = 0, x and y in [0, 1]; a ray straight down hits it at distance 5.
SQUARE = {"name": "square", "vertices": [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], "faces": [[0, 1, 2], [0, 2, 3]]}
DOWN = {"origin": [0.75, 0.25, 5.0], "direction": [0.0, 0.0, -1.0]}


# ------------------------------------------------------------------ the tests
def test_container_serves_and_keeps_its_scenes_through_kill_9(image, engine_objects):
    volume = engine_objects("volumes")
    docker("volume", "create", volume)
    key, port = uuid.uuid4().hex, _free_port()

    first = engine_objects("containers")
    # The image's HEALTHCHECK command, checked every second instead of every 30.
    ready = start_service(first, volume, port, key, "--health-interval", "1s", "--health-start-period", "0s")
    print(f"\n[container] /ready {ready:.1f} s after docker run", flush=True)

    # The service runs as the Dockerfile's user: PID 1 is `python -m service`, with uid and gid 10001.
    status = docker("exec", first, "cat", "/proc/1/status", "/proc/1/cmdline").stdout
    assert re.search(rf"^Uid:\s+{SERVICE_UID}\s+{SERVICE_UID}\s+{SERVICE_UID}\s+{SERVICE_UID}$", status, re.M), status
    assert re.search(rf"^Gid:\s+{SERVICE_UID}\s", status, re.M), status
    assert "python\0-m\0service" in status

    assert call(port, "GET", "/scenes")[0] == 401, "the key is not required"
    created, scene = call(port, "POST", "/scenes", {"name": "kept", "meshes": [SQUARE]}, key)
    assert created == 201, scene
    # Uploaded right after /ready turns 200, while the other kernels still load from the cache in the
    # background: on 2026-12-03 3 uploads of 8 at that moment answered 201 with other vertices than
    # sent (bounds like [[0, 0, 0], [0.29, 0.44, 0]]), a service bug this checks for.
    assert scene["bounds"] == [[0.0, 0.0, 0.0], [1.0, 1.0, 0.0]], \
        f"the upload answered 201 with other vertices than sent: {scene['bounds']}"
    picked, hit = call(port, "POST", f"/scenes/{scene['id']}/pick", DOWN, key)
    assert picked == 200 and hit["hit"] and abs(hit["distance"] - 5.0) < 1e-5, hit

    deadline = time.monotonic() + 30
    while (health := docker("inspect", "--format", "{{.State.Health.Status}}", first).stdout.strip()) != "healthy":
        assert health == "starting" and time.monotonic() < deadline, \
            f"HEALTHCHECK: {health}: {docker('inspect', '--format', '{{json .State.Health}}', first).stdout}"
        time.sleep(0.5)

    # SIGKILL right after the answers: what was answered 201 is on the volume.
    docker("kill", "--signal", "KILL", first)
    assert docker("wait", first).stdout.strip() == "137"

    second = engine_objects("containers")
    ready = start_service(second, volume, port, key)
    print(f"[container] /ready {ready:.1f} s after docker run on the volume the killed container left", flush=True)
    listed, scenes = call(port, "GET", "/scenes", key=key)
    assert listed == 200 and scene["id"] in json.dumps(scenes), scenes
    found, again = call(port, "GET", f"/scenes/{scene['id']}", key=key)
    assert found == 200 and again["name"] == "kept" and again["triangles"] == 2, again
    assert call(port, "POST", f"/scenes/{scene['id']}/pick", DOWN, key) == (200, hit)


def test_container_refuses_to_start_open_without_a_key(image, engine_objects):
    # On every interface (the image's PICK_HOST=0.0.0.0) and no PICK_API_KEY: the service exits
    # at once, saying why and how to serve without a key on purpose.
    refused = docker("run", "--name", engine_objects("containers"), "--network", "host",
                     "--env", f"PICK_PORT={_free_port()}", image, check=False, timeout=120)
    assert refused.returncode not in (0, 125, 126, 127), (refused.returncode, refused.stderr[-3000:])
    assert "PICK_API_KEY is not set" in refused.stderr and "PICK_ALLOW_OPEN=true" in refused.stderr, \
        refused.stderr[-3000:]
