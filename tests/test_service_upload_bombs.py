"""Compression and texture bombs: refused (413) before they expand, with the server's memory measured.

Each bomb (``testkit.bombs``) expands to 2 GiB of zeros from a few bytes to
2 MB; it is POSTed to a real ``python -m service`` with the default settings,
and the server's peak RSS over the request (``VmHWM``, reset before it, summed
with its reader processes') must grow by at most 100 MB. Compressed files and archives that fit still read,
through the library and through the server.
"""

import bz2
import gzip
import io
import lzma
import tarfile
import time
import zipfile
from pathlib import Path

import httpx
import numpy as np
import pytest
import trimesh

from bvh.io.archives import LimitExceeded, ReadLimits, expand
from bvh.io.load import read_scene_description
from testkit.bombs import memory, process_tree, reset_peak, upload_bombs, zip_of_zeros
from testkit.servers import free_port, start_server

MEBIBYTE = 1 << 20
BOX = trimesh.creation.box()
BOX_OBJ = BOX.export(file_type="obj").encode()
BOX_STL = BOX.export(file_type="stl")

#: Most the server's peak RSS may grow while it refuses a bomb.
RSS_GROWTH_BYTES = 100 * MEBIBYTE

#: A generous bound on a refusal's answer time (the bench measures it; 2 cores are shared here).
ANSWER_SECONDS = 10.0

#: What each bomb's refusal names: the member or image, and the setting.
REFUSALS = {
    "bz2": ("this OBJ.BZ2 file expands past", "PICK_MAX_EXPANSION_RATIO=100"),
    "gzip": ("this OBJ.GZ file expands past", "PICK_MAX_EXPANSION_RATIO=100"),
    "xz": ("this STL.XZ file expands past", "PICK_MAX_EXPANSION_RATIO=100"),
    "zip": ("member 'bomb.obj' of this ZIP file expands past", "PICK_MAX_EXPANSION_RATIO=100"),
    "tar.gz": ("member 'bomb.obj' of this TAR.GZ file expands past", "PICK_MAX_EXPANSION_RATIO=100"),
    "3mf": ("member '3D/3dmodel.model' of this 3MF file expands past", "PICK_MAX_EXPANSION_RATIO=100"),
    "texture": ("image 0 ('huge') is 13000 x 13000 = 169000000 pixels, more than the 16777216 a texture may have",
                "PICK_MAX_TEXTURE_PIXELS=16777216"),
}


@pytest.fixture(scope="module")
def bombs():
    return upload_bombs()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("bombs")
    port = free_port()
    with pytest.MonkeyPatch.context() as patch:
        # No query runs here: the kernels need not be compiled first.
        patch.setenv("PICK_WARM_UP", "false")
        process = start_server(data_dir, port)
    base = f"http://127.0.0.1:{port}"
    try:
        # Once, so that the modules an upload imports (trimesh) are not counted against a bomb.
        assert post_file(base, "box.zip", _zip({"box.obj": BOX_OBJ})).status_code == 201
        yield process, base
    finally:
        process.kill()
        process.wait()


def post_file(base: str, filename: str, content: bytes) -> httpx.Response:
    return httpx.post(f"{base}/scenes/upload", files={"file": (filename, content, "application/octet-stream")}, timeout=120)


@pytest.mark.parametrize("kind", list(REFUSALS))
def test_bomb_is_refused_before_it_expands(server, bombs, kind):
    process, base = server
    filename, content = bombs[kind]
    peak_reset = reset_peak(process.pid)
    before = memory(process.pid)["VmRSS"]
    start = time.perf_counter()
    response = post_file(base, filename, content)
    seconds = time.perf_counter() - start
    after = memory(process.pid)
    growth = (after["VmHWM"] if peak_reset else after["VmRSS"]) - before
    print(f"{kind}: {len(content)} bytes -> {response.status_code} in {seconds:.3f} s, "
          f"RSS growth {growth / MEBIBYTE:.1f} MB")
    assert response.status_code == 413, response.text
    detail = response.json()["detail"]
    what, setting = REFUSALS[kind]
    assert detail.startswith(f"file {filename!r}: {what}") and detail.endswith(f"({setting})"), detail
    assert seconds < ANSWER_SECONDS
    assert growth <= RSS_GROWTH_BYTES
    assert httpx.get(f"{base}/health", timeout=10).status_code == 200


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _tar(members: dict[str, bytes], compression: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=f"w:{compression}") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.mark.parametrize(("filename", "content", "triangles"), [
    ("box.obj.gz", gzip.compress(BOX_OBJ), 12),
    ("box.stl.bz2", bz2.compress(BOX_STL), 12),
    ("box.obj.xz", lzma.compress(BOX_OBJ), 12),
    ("boxes.zip", _zip({"parts/box.obj": BOX_OBJ, "box.stl": BOX_STL, "notes.txt": b"two boxes"}), 24),
    ("boxes.tar.gz", _tar({"box.obj": BOX_OBJ, "box.stl": BOX_STL}, "gz"), 24),
    ("box.3mf", BOX.export(file_type="3mf"), 12),
])
def test_compressed_upload_that_fits_is_read(server, filename, content, triangles):
    _, base = server
    response = post_file(base, filename, content)
    assert response.status_code == 201, response.text
    assert response.json()["triangles"] == triangles


def test_compressed_upload_must_say_what_it_holds(server):
    _, base = server
    response = post_file(base, "model.gz", gzip.compress(BOX_OBJ))
    assert response.status_code == 415
    assert response.json()["detail"] == ("file 'model.gz' is compressed with gz: its name must say what it holds, as "
                                         "model.obj.gz or scene.tar.gz")


def test_archive_members_are_read_in_order_with_their_names():
    gltf = trimesh.Scene(BOX).export(file_type="gltf")
    archive = _zip({"a/box.obj": BOX_OBJ, **{f"b/{name}": data for name, data in gltf.items()}})
    description = read_scene_description(archive, "zip")
    assert description.file_type == "zip" and len(description.meshes) == 2
    assert [instance.mesh for instance in description.instances] == [0, 1]
    for mesh in description.meshes:
        assert np.array_equal(np.sort(mesh.vertices, axis=0), np.sort(BOX.vertices, axis=0))


def test_compressed_file_is_named_by_the_caller():
    description = read_scene_description(gzip.compress(BOX_STL), "stl.gz", name="gear")
    assert [mesh.name for mesh in description.meshes] == ["gear"]


def test_expanded_bytes_limit_names_the_member():
    data = gzip.compress(BOX_OBJ * 100)
    with pytest.raises(LimitExceeded, match=r"^this OBJ.GZ file expands past 1000 bytes: the "
                                            r"most a compressed upload may expand to is") as refused:
        read_scene_description(data, "obj.gz", limits=ReadLimits(expanded_bytes=1000))
    assert refused.value.limit == "expanded_bytes"


def test_zip_declaring_more_than_the_budget_is_refused_unexpanded():
    bomb = zip_of_zeros("bomb.obj", 64 * MEBIBYTE)
    start = time.process_time()
    with pytest.raises(LimitExceeded, match=r"^member 'bomb.obj' of this ZIP file expands past 1048576 bytes"):
        expand(bomb, "zip", "ZIP", ReadLimits(expanded_bytes=MEBIBYTE))
    # Not one of its 64 MiB was inflated: the refusal came from the central directory.
    assert time.process_time() - start < 0.05


def test_compressed_file_without_its_type_says_so():
    with pytest.raises(ValueError, match=r"^could not read this as BZ2: say which type of file it compresses, as "
                                         r"file_type='obj.bz2'"):
        read_scene_description(bz2.compress(BOX_OBJ), "bz2")


def test_uploads_past_the_concurrent_builds_get_503_with_retry_after(make_client):
    client = make_client(max_concurrent_builds=2)
    slots = client.app.state.build_slots
    scene = client.post("/scenes/upload", files={"file": ("box.obj", BOX_OBJ)}).json()["id"]
    inline = {"vertices": [[0, 0, 0], [1, 0, 0], [0, 1, 0]], "faces": [[0, 1, 2]]}
    with slots.slot(), slots.slot():
        refused = [client.post("/scenes/upload", files={"file": ("box.obj", BOX_OBJ)}),
                   client.post("/scenes", json={"meshes": [inline]}),
                   client.post(f"/scenes/{scene}/objects/upload", files={"file": ("box.obj", BOX_OBJ)}),
                   client.post(f"/scenes/{scene}/objects", json=inline)]
        for response in refused:
            assert response.status_code == 503 and response.headers["retry-after"] == "2"
            assert response.json() == {"detail": "2 uploads are being read and built already, the most at once "
                                                 "(PICK_MAX_CONCURRENT_BUILDS=2); nothing was changed: retry in 2 s"}
        # Placing an instance of a mesh builds nothing: it needs no slot.
        assert client.post(f"/scenes/{scene}/objects", json={"mesh": 0}).status_code == 201
    assert slots.busy == 0
    assert len(client.get(f"/scenes/{scene}").json()["objects"]) == 2
    assert client.post("/scenes/upload", files={"file": ("box.obj", BOX_OBJ)}).status_code == 201


def test_readers_exit_when_their_server_is_killed(tmp_path):
    port = free_port()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PICK_WARM_UP", "false")
        process = start_server(tmp_path, port)
    try:
        assert post_file(f"http://127.0.0.1:{port}", "box.obj.gz", gzip.compress(BOX_OBJ)).status_code == 201
        readers = [pid for pid in process_tree(process.pid) if pid != process.pid
                   and "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text()]
        assert readers
    finally:
        process.kill()
        process.wait()
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{pid}").exists() for pid in readers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in readers if Path(f"/proc/{pid}").exists()]
