"""Issue 36's bars for the store, measured on a real ``python -m service``: damaged data and a full disk.

Run it with::

    python -m bench.integrity                  # both parts
    python -m bench.integrity --skip-full-disk # the damage cases only (no tmpfs needed)

**Damage.** One scene per case gets ``--edits`` acknowledged moves; the
server is killed with SIGKILL; each scene's files are damaged one way (a
byte flipped mid-journal, the journal truncated to 0 and to an odd offset,
a record cut out, the journal deleted after a checkpoint, a byte flipped in
each kind of saved array, an array file deleted); the server starts again
and every write route is sent to every scene, ``--rounds`` times; it is
stopped (SIGTERM: the checkpoints due are written) and ``python -m service
verify`` runs. Counted: scenes served as whole (``state`` ok) with other data
than acknowledged (bar: 0), bytes of a damaged journal that changed (bar: 0),
cases ``verify`` reports (bar: all).

**Full disk** (root only: a 30 MB tmpfs is mounted for it). A scene is made,
the disk filled, and ``--threads`` clients send uploads, single, batch and
binary edits, vertex updates and mesh additions for ``--seconds``; the disk
is freed, more edits go in, the server is killed with SIGKILL and started
again. Counted: dropped connections and bare 500s (bar: 0 each), 507s, and
acknowledged writes missing after the restart (bar: 0).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from testkit.meshes import grid_mesh

from .load import Server

ROOT = Path(__file__).resolve().parents[1]
TRIANGLE = {"vertices": [[0.0, 0, 0], [1, 0, 0], [0, 1, 0]], "faces": [[0, 1, 2]]}
JOURNAL_CASES = ("flip", "truncated to 0", "truncated at an odd offset", "sequence gap", "journal missing")


def at(x: float) -> list:
    return [[1, 0, 0, x], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]


def flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))


def damage_journal(case: str, path: Path) -> None:
    from service.store import journal
    from service.store.integrity import frame_offsets

    data = path.read_bytes()
    records, _ = journal.read_records(data)
    offsets = frame_offsets(data, len(records)) + [len(data)]
    if case == "flip":
        flip(path, len(data) // 2)
    elif case == "truncated to 0":
        os.truncate(path, 0)
    elif case == "truncated at an odd offset":
        os.truncate(path, (len(data) // 2) | 1)
    elif case == "sequence gap":
        middle = len(records) // 2
        path.write_bytes(data[:offsets[middle]] + data[offsets[middle + 1]:])
    else:
        path.unlink()


def start(server: Server) -> None:
    server.start(timeout=900, every_kernel=False)


def kill_9(server: Server) -> None:
    server.process.kill()
    server.process.wait()
    server._log.close()


def write_everything(base: str, scene_id: str) -> list[int]:
    """Every write route on the scene, once: the statuses."""
    body = {"transform": at(-1.0)}
    answers = [httpx.patch(f"{base}/scenes/{scene_id}/objects/0", json=body),
               httpx.patch(f"{base}/scenes/{scene_id}/objects", json=[{"id": 0, **body}]),
               httpx.post(f"{base}/scenes/{scene_id}/objects", json={"mesh": 0}),
               httpx.post(f"{base}/scenes/{scene_id}/objects", json=TRIANGLE),
               httpx.put(f"{base}/scenes/{scene_id}/meshes/0/vertices", json={"vertices": TRIANGLE["vertices"]}),
               httpx.delete(f"{base}/scenes/{scene_id}/objects/0"),
               httpx.delete(f"{base}/scenes/{scene_id}")]
    return [answer.status_code for answer in answers]


def damage_bars(edits: int, rounds: int) -> dict:
    server = Server(sample_scenes=False)
    os.environ.update(PICK_CHECKPOINT_SECONDS="3600", PICK_CHECKPOINT_RECORDS="1000000")
    base = server.url
    scenes, histories = {}, {}
    start(server)
    try:
        array_kinds = []
        for case in JOURNAL_CASES + ("array", "array missing"):
            scene_id = httpx.post(f"{base}/scenes", json={"meshes": [TRIANGLE]}).json()["id"]
            history = [httpx.get(f"{base}/scenes/{scene_id}").json()["objects"]]
            if case == "journal missing":
                httpx.post(f"{base}/scenes/{scene_id}/objects", json=TRIANGLE)
                history.append(httpx.get(f"{base}/scenes/{scene_id}").json()["objects"])
            for _ in range(3):
                httpx.post(f"{base}/scenes/{scene_id}/objects", json={"mesh": 0})
                history.append(httpx.get(f"{base}/scenes/{scene_id}").json()["objects"])
            for step in range(edits):
                assert httpx.patch(f"{base}/scenes/{scene_id}/objects/{step % 4}",
                                   json={"transform": at(10.0 + step)}).status_code == 200
                history.append(httpx.get(f"{base}/scenes/{scene_id}").json()["objects"])
            scenes[case], histories[case] = scene_id, history
    finally:
        kill_9(server)
    scenes_dir = server.data_dir / "scenes"
    for case in JOURNAL_CASES:
        damage_journal(case, scenes_dir / scenes[case] / "journal")
    # One scene per kind of saved array, each with one byte flipped in that array's file.
    manifest = json.loads((scenes_dir / scenes["array"] / "scene" / "manifest.json").read_text())
    for name, entry in manifest["arrays"].items():
        if entry["bytes"] <= 128:
            continue
        copy = f"{scenes['array'][:-6]}{len(array_kinds):06x}"
        subprocess.run(["cp", "-a", str(scenes_dir / scenes["array"]), str(scenes_dir / copy)], check=True)
        service = json.loads((scenes_dir / copy / "service.json").read_text())
        (scenes_dir / copy / "service.json").write_text(json.dumps({**service, "id": copy}))
        flip(scenes_dir / copy / "scene" / entry["file"], entry["bytes"] - 1)
        array_kinds.append((name, copy))
    missing = json.loads((scenes_dir / scenes["array missing"] / "scene" / "manifest.json").read_text())
    (scenes_dir / scenes["array missing"] / "scene" / next(iter(missing["arrays"].values()))["file"]).unlink()
    journals = {case: scenes_dir / scenes[case] / "journal" for case in JOURNAL_CASES}
    before = {case: path.read_bytes() if path.exists() else b"" for case, path in journals.items()}

    start(server)
    served_whole_wrongly, statuses = 0, {}
    try:
        listed = {scene["id"]: scene for scene in httpx.get(f"{base}/scenes").json()["scenes"]}
        damaged_ids = [scenes[case] for case in JOURNAL_CASES] + [copy for _, copy in array_kinds]
        damaged_ids.append(scenes["array missing"])
        for scene_id in damaged_ids:
            answer = httpx.get(f"{base}/scenes/{scene_id}")
            if answer.status_code == 200 and answer.json()["state"] == "ok":
                served_whole_wrongly += 1
            elif scene_id in listed and listed[scene_id]["state"] == "ok":
                served_whole_wrongly += 1
        for case in JOURNAL_CASES:
            scene = httpx.get(f"{base}/scenes/{scenes[case]}").json()
            if scene["objects"] not in histories[case]:
                served_whole_wrongly += 1
            for _ in range(rounds):
                for status in write_everything(base, scenes[case]):
                    statuses[status] = statuses.get(status, 0) + 1
    finally:
        server.process.terminate()
        server.process.wait(timeout=120)
        server._log.close()
    changed = 0
    for case, path in journals.items():
        after = path.read_bytes() if path.exists() else b""
        changed += abs(len(after) - len(before[case])) + sum(a != b for a, b in zip(after, before[case]))
    verified = subprocess.run([sys.executable, "-m", "service", "verify", str(server.data_dir)], cwd=ROOT,
                              capture_output=True, text=True)
    reported = sum(f"DAMAGED {scene_id}" in verified.stdout for scene_id in damaged_ids)
    server.stop()
    return {"cases": len(JOURNAL_CASES) + len(array_kinds) + 1, "array kinds": len(array_kinds),
            "served whole with other data than acknowledged": served_whole_wrongly,
            "damaged journal bytes changed by later requests": changed,
            "write answers to damaged scenes": statuses, "verify exit code": verified.returncode,
            "cases verify reports": reported}


def full_disk_bars(threads: int, seconds: float) -> dict:
    mount = Path(tempfile.mkdtemp(prefix="pick-full-disk-"))
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=30m", "tmpfs", str(mount)],
                             capture_output=True, text=True)
    if mounted.returncode:
        return {"skipped": f"cannot mount a tmpfs: {mounted.stderr.strip()}"}
    server = Server(sample_scenes=False)
    server.data_dir = mount / "data"
    os.environ.update(PICK_CHECKPOINT_RECORDS="50")
    base = server.url
    lock = threading.Lock()
    counts = {"answers": {}, "dropped": 0, "acknowledged edits": 0}
    acked: dict[int, float] = {}
    try:
        start(server)
        scene_id = httpx.post(f"{base}/scenes", json={"meshes": [grid_mesh()]}).json()["id"]
        for _ in range(threads * 4 - 1):
            httpx.post(f"{base}/scenes/{scene_id}/objects", json={"mesh": 0})
        filler = mount / "filler"
        with open(filler, "ab", buffering=0) as stream:
            for chunk in (1 << 20, 1 << 12, 1):
                try:
                    while True:
                        stream.write(bytes(chunk))
                except OSError:
                    pass
        upload = "\n".join([f"v {x} {y} {z}" for x, y, z in grid_mesh()["vertices"]]
                           + [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in grid_mesh()["faces"]]).encode()
        stop = time.monotonic() + seconds

        def client(number: int) -> None:
            value, step = 1000.0 * (number + 1), 0
            with httpx.Client(base_url=base, timeout=60) as http:
                while time.monotonic() < stop:
                    step += 1
                    oid = number * 4 + step % 4
                    value += 1.0
                    kind = step % 8
                    try:
                        if kind == 0:
                            answer = http.post("/scenes/upload", files={"file": ("grid.obj", upload)})
                        elif kind == 1:
                            answer = http.post(f"/scenes/{scene_id}/objects", json=TRIANGLE)
                        elif kind == 2:
                            answer = http.put(f"/scenes/{scene_id}/meshes/0/vertices",
                                              json={"vertices": grid_mesh()["vertices"]})
                        elif kind % 2:
                            answer = http.patch(f"/scenes/{scene_id}/objects/{oid}", json={"transform": at(value)})
                        else:
                            answer = http.patch(f"/scenes/{scene_id}/objects",
                                                json=[{"id": oid, "transform": at(value)}])
                    except httpx.HTTPError:
                        with lock:
                            counts["dropped"] += 1
                        continue
                    with lock:
                        counts["answers"][answer.status_code] = counts["answers"].get(answer.status_code, 0) + 1
                        if kind >= 3 and answer.status_code == 200:
                            acked[oid] = value
                            counts["acknowledged edits"] += 1

        workers = [threading.Thread(target=client, args=(number,)) for number in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        filler.unlink()
        for oid in range(threads * 4):
            value = -float(oid)
            if httpx.patch(f"{base}/scenes/{scene_id}/objects/{oid}", json={"transform": at(value)}).status_code == 200:
                acked[oid] = value
        kill_9(server)
        start(server)
        objects = {o["id"]: o["transform"][0][3] for o in httpx.get(f"{base}/scenes/{scene_id}").json()["objects"]}
        counts["acknowledged writes missing after kill -9"] = sum(objects.get(oid) != value
                                                                 for oid, value in acked.items())
        kill_9(server)
    finally:
        if server.process is not None and server.process.poll() is None:
            server.process.kill()
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)
        server.stop()
    counts["bare 500s"] = counts["answers"].get(500, 0)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=44)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--skip-full-disk", action="store_true")
    arguments = parser.parse_args()
    print("damage:", json.dumps(damage_bars(arguments.edits, arguments.rounds), indent=1))
    if not arguments.skip_full_disk:
        print("full disk:", json.dumps(full_disk_bars(arguments.threads, arguments.seconds), indent=1))


if __name__ == "__main__":
    main()
