"""Picks while objects move and files upload: every pick sees the scene before or after an edit,
never half of one."""

import threading
import time

import numpy as np
import pytest

import bvh
import sample_meshes
from service.queries.picking import single_result
from service.store.store import SceneStore

#: A 2×2 quad of two triangles in the z = 0 plane, centred on the origin.
QUAD = {"vertices": [[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], "faces": [[0, 1, 2], [0, 2, 3]]}


def lifted(z: float) -> list:
    return [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, z], [0, 0, 0, 1]]


def check_consistent(hit: dict) -> None:
    # Each edit sets the height and the name together: the name, t, the point
    # and the snapped vertex must all tell the same height.
    assert hit["hit"], hit
    height = {"at 0": 0.0, "at 1": 1.0}[hit["object"]["name"]]
    assert hit["t"] == pytest.approx(5.0 - height)
    assert hit["point"][2] == pytest.approx(height)
    assert hit["nearest_vertex"]["point"][2] == pytest.approx(height)


def run_threads(workers, seconds: float, enough=lambda: True, limit: float = 60.0) -> None:
    """Run each worker in a loop on its own thread for ``seconds``, and on
    until ``enough()`` holds (at most ``limit`` seconds in all): on a busy
    machine the scheduler may give one thread few turns at first."""
    stop = threading.Event()
    errors = []

    def guarded(work):
        def loop():
            try:
                while not stop.is_set():
                    work()
            except BaseException as error:  # reported in the test's own thread below
                errors.append(error)
                stop.set()
        return loop

    threads = [threading.Thread(target=guarded(work)) for work in workers]
    for thread in threads:
        thread.start()
    start = time.monotonic()
    time.sleep(seconds)
    while not stop.is_set() and not enough() and time.monotonic() - start < limit:
        time.sleep(0.1)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    if errors:
        raise errors[0]


def test_http_picks_while_an_object_moves_and_files_upload(client):
    scene_id = client.post("/scenes", json={"meshes": [{"name": "at 0", **QUAD}]}).json()["id"]
    torus = sample_meshes.path("torus.ply").read_bytes()
    counts = {"picks": 0, "moves": 0, "uploads": 0}

    def move():
        height = counts["moves"] % 2
        response = client.patch(f"/scenes/{scene_id}/objects/0",
                                json={"transform": lifted(height), "name": f"at {height}"})
        assert response.status_code == 200, response.text
        counts["moves"] += 1

    def pick():
        response = client.post(f"/scenes/{scene_id}/pick", json={"origin": [0.3, 0.2, 5], "direction": [0, 0, -1],
                                                                "objects": [0]})
        assert response.status_code == 200, response.text
        check_consistent(response.json())
        counts["picks"] += 1

    def upload():
        transform = "[[1,0,0,20],[0,1,0,0],[0,0,1,0],[0,0,0,1]]"
        response = client.post(f"/scenes/{scene_id}/objects/upload", files={"file": ("torus.ply", torus)},
                               data={"transform": transform})
        assert response.status_code == 201, response.text
        counts["uploads"] += 1

    def enough():
        return counts["moves"] > 5 and counts["picks"] > 20 and counts["uploads"] > 0

    run_threads([move, pick, pick, upload], seconds=3.0, enough=enough)
    assert enough(), counts
    assert len(client.get(f"/scenes/{scene_id}").json()["objects"]) == 1 + counts["uploads"]


def test_store_queries_never_see_half_an_edit(tmp_path):
    # Without HTTP in between, queries and edits interleave far more often.
    store = SceneStore(tmp_path)
    store.open_all()
    scene = bvh.Scene()
    scene.add_instance(scene.add_mesh(np.array(QUAD["vertices"], float), np.array(QUAD["faces"])), name="at 0")
    stored = store.create(scene, "moving", 0.0)
    origin, direction = np.array([0.3, 0.2, 5.0]), np.array([0.0, 0.0, -1.0])
    counts = {"picks": 0, "moves": 0}

    def move():
        height = counts["moves"] % 2

        def change(target):
            target.set_transform(0, np.array(lifted(height), float))
            # A pause between the two steps of one edit: a query that could
            # see the first step alone would now do so, often.
            time.sleep(0.001)
            target.set_name(0, f"at {height}")

        store.edit(stored.id, change)
        counts["moves"] += 1

    def pick():
        current = store.get(stored.id)
        hits, view = current.consistent(lambda s: s.intersect(origin, direction))
        check_consistent(single_result(current, view, hits, 1.0))
        counts["picks"] += 1

    def enough():
        return counts["moves"] > 10 and counts["picks"] > 100

    run_threads([move, pick, pick], seconds=2.0, enough=enough)
    assert enough(), counts
