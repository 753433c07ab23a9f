"""The sample scenes: created once per data directory, and what ``make serve`` starts with."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

import sample_meshes
from service.ops.samples import MARKER, create_sample_scenes
from service.store.store import SceneStore
from testkit.servers import free_port

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_NAMES = sorted(Path(name).stem for name in sample_meshes.ALL)


def test_sample_scenes_are_created_once_per_data_directory(tmp_path):
    assert sorted(create_sample_scenes(tmp_path)) == SAMPLE_NAMES
    store = SceneStore(tmp_path)
    store.open_all()
    by_name = {stored.name: stored for stored in store.list()}
    assert sorted(by_name) == SAMPLE_NAMES
    assert len(by_name["city_block"].scene.objects) == 47
    assert (tmp_path / MARKER).exists()

    # A later start creates nothing, even once the user has deleted a sample.
    store.delete(by_name["torus"].id)
    assert create_sample_scenes(tmp_path) == []
    store = SceneStore(tmp_path)
    store.open_all()
    assert sorted(stored.name for stored in store.list()) == [n for n in SAMPLE_NAMES if n != "torus"]


def test_make_serve_answers_health_and_lists_the_sample_scenes(tmp_path):
    port = free_port()
    env = dict(os.environ, PICK_DATA_DIR=str(tmp_path / "data"), PICK_PORT=str(port), PICK_LOG_LEVEL="warning")
    env.pop("PICK_API_KEY", None)
    env.pop("PICK_SAMPLE_SCENES", None)
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        # The project's interpreter rather than .venv's, and -o: do not (re)install here.
        server = subprocess.Popen(["make", "-s", "serve", f"PY={sys.executable}", "-o", ".venv/.installed"],
                                  cwd=ROOT, env=env, stdout=log, stderr=log, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while True:
            assert server.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, "make serve did not become ready in 10 minutes"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/ready", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        assert httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200
        scenes = httpx.get(f"http://127.0.0.1:{port}/scenes").json()["scenes"]
        assert sorted(scene["name"] for scene in scenes) == SAMPLE_NAMES
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
