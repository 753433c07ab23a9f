"""Clients generated from the live ``/openapi.json`` work as generated.

Both generators run at their default settings, at the versions pinned in
``pyproject.toml`` (openapi-python-client, the test extra) and
``tests/generators/package.json`` (openapi-typescript with openapi-fetch and
typescript; ``npm ci`` there once, into ``node_modules`` next to it, which git
ignores). Every generated Python module must import and the TypeScript must
compile with ``tsc --strict``, without a hand edit; then the README's curl
session, with the binary forms of docs/http-api.md's (batch picks, closest
points, sphere casts, containment, batch moves, vertices and faces, the PNG,
the GLB), runs through each client against a real ``python -m service``.

The TypeScript session is ``tests/generators/session.ts``; the Python one is
:func:`python_session` below. Skipped only when node or npm is missing, or when
the pinned packages cannot be installed (no npm registry), saying which.
"""

import importlib
import importlib.util
import json
import os
import pkgutil
import shutil
import struct
import subprocess
import sys
from io import BytesIO
from pathlib import Path

import httpx
import pytest

from testkit.servers import free_port, start_server, stop

ROOT = Path(__file__).resolve().parents[1]
GENERATORS = ROOT / "tests" / "generators"
TORUS = ROOT / "sample_meshes" / "torus.ply"

#: The README's answers the sessions compare with.
PICK_T = 4.658979256406773
CLOSEST_DISTANCE = 1.1653818953544948


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data = tmp_path_factory.mktemp("generated-clients")
    port = free_port()
    process = start_server(data, port)
    yield f"http://127.0.0.1:{port}"
    stop(process)


@pytest.fixture(scope="module")
def spec_file(server, tmp_path_factory) -> Path:
    """The live app's ``/openapi.json``, as a client team would download it."""
    spec = httpx.get(f"{server}/openapi.json", timeout=600).raise_for_status().json()
    ids = [operation["operationId"] for operations in spec["paths"].values() for operation in operations.values()]
    assert len(ids) == len(set(ids)), "operationIds repeat: generated clients would name two functions alike"
    path = tmp_path_factory.mktemp("spec") / "openapi.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    return path


def run(command: list[str], cwd: Path, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


# ------------------------------------------------------------------ Python: openapi-python-client

def near(value, expected: float, tolerance: float = 1e-9) -> bool:
    return value is not None and abs(value - expected) <= tolerance * max(1.0, abs(expected))


def python_session(client_package: str, base_url: str) -> list[str]:
    """The README's session through the generated Python client; the steps done, in order."""
    def api(name: str):
        return importlib.import_module(f"{client_package}.api.{name}")

    models = importlib.import_module(f"{client_package}.models")
    types = importlib.import_module(f"{client_package}.types")
    client = importlib.import_module(client_package).Client(base_url=base_url, timeout=httpx.Timeout(600))
    done = []

    def check(condition: bool, what: str) -> None:
        assert condition, f"not as the README says: {what}"
        done.append(what)

    def octets(data: bytes):
        return types.File(payload=BytesIO(data))

    with TORUS.open("rb") as torus:
        scene = api("scenes.upload_scene").sync(client=client, body=models.UploadSceneBody(
            file=types.File(payload=torus, file_name="torus.ply"), name="torus"))
    check(isinstance(scene, models.SceneOut) and scene.name == "torus" and scene.triangles == 2304,
          "upload: a scene of 2304 triangles")
    scene_id = scene.id

    hit = api("picks.pick").sync(scene_id, client=client, body=models.PickRequest(origin=[0, 0, 5],
                                                                                 direction=[0.2, 0, -1]))
    check(isinstance(hit, models.PickResult) and hit.hit and near(hit.t, PICK_T) and hit.triangle == 12,
          "pick: t 4.658979256406773 on triangle 12")

    batch = api("picks.pick_batch").sync(scene_id, client=client, body=models.BatchPickRequest(
        origins=[[0, 0, 5], [5, 5, 5]], directions=[[0.2, 0, -1], [0, 0, -1]]))
    check(batch.hit == [True, False] and near(batch.t[0], PICK_T) and batch.triangle[0] == 12, "batch (JSON)")

    rays = struct.pack("<12f", 0, 0, 5, 0.2, 0, -1, 5, 5, 5, 0, 0, -1)
    packed = api("picks.pick_batch_binary").sync(scene_id, client=client, body=octets(rays)).payload.read()
    first, second = struct.unpack_from("<fii", packed, 0), struct.unpack_from("<fii", packed, 32)
    check(len(packed) == 64 and near(first[0], PICK_T, 1e-5) and first[2] == 12 and second[0] == float("inf")
          and second[1] == -1, "batch (binary): 2 records of 32 bytes")

    selected = api("select.select").sync(scene_id, client=client, body=models.PinholeSelect(
        position=[0, -4, 3], target=[0, 0, 0], up=[0, 0, 1], fov_y_deg=50, width=640, height=480,
        rect=[200, 150, 440, 330]))
    check([entry.id for entry in selected.objects] == [0], "select: the torus")

    closest = api("proximity.closest").sync(scene_id, client=client, body=models.ClosestRequest(
        points=[[0.7, 0.4, 1.5], [5, 0, 0]], max_distance=3))
    check(closest.found == [True, False] and near(closest.distance[0], CLOSEST_DISTANCE)
          and closest.triangle[0] == 157, "closest (JSON)")
    nearest = api("proximity.closest_binary").sync(scene_id, client=client, max_distance=3, body=octets(
        struct.pack("<6f", 0.7, 0.4, 1.5, 5, 0, 0))).payload.read()
    check(len(nearest) == 88 and near(struct.unpack_from("<f", nearest)[0], CLOSEST_DISTANCE, 1e-5)
          and struct.unpack_from("<i", nearest, 8)[0] == 157 and struct.unpack_from("<i", nearest, 48)[0] == -1,
          "closest (binary)")

    moved = api("objects.update_object").sync(scene_id, 0, client=client, body=models.ObjectUpdate(
        transform=[[1, 0, 0, 2], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]))
    check(near(moved.bounds[0][0], 0.6499999761581421), "move the torus by 2 in x")

    refused = api("picks.pick").sync(scene_id, client=client, body=models.PickRequest(origin=[0, 0, 5],
                                                                                     direction=[0, 0, 0]))
    check(isinstance(refused, models.ErrorOut) and refused.detail == "direction must not be the zero vector",
          "a zero direction: 422 saying so")

    # docs/http-api.md goes on: a copy, batch edits (JSON and binary), vertices out and in, the export.
    copy = api("objects.add_objects").sync(scene_id, client=client, body=models.InstanceCreate(mesh=0, name="copy"))
    check([entry.id for entry in copy.objects] == [1], "add an instance")
    renamed = api("objects.update_objects").sync(scene_id, client=client, body=[
        models.ObjectBatchUpdate(id=1, name="x"), models.ObjectBatchUpdate(id=0, mask=1)])
    check(renamed.count == 2 and renamed.objects[0].name == "x", "batch edit (JSON list)")
    move = struct.pack("<i12f", 1, 1, 0, 0, 0, 0, 1, 0, 3, 0, 0, 1, 0)
    moves = api("objects.move_objects").sync(scene_id, client=client, body=octets(move))
    check(moves.count == 1 and moves.objects is None, "batch moves (binary)")

    vertices = api("export.get_vertices_binary").sync(scene_id, 0, client=client).payload.read()
    check(len(vertices) == 1152 * 12, "vertices (binary): 1152 float32 triples")
    listed = api("export.get_vertices").sync(scene_id, 0, client=client)
    check(len(listed.vertices) == 1152 and tuple(listed.vertices[0]) == struct.unpack_from("<3f", vertices),
          "vertices (JSON) as the binary ones")
    scaled = struct.pack(f"<{1152 * 3}f", *(value * 1.5 for value in struct.unpack(f"<{1152 * 3}f", vertices)))
    replaced = api("objects.replace_vertices_binary").sync(scene_id, 0, client=client, body=octets(scaled))
    check(isinstance(replaced, models.VerticesResult), "vertices scaled by 1.5 (binary)")
    faces = api("export.get_faces_binary").sync(scene_id, 0, client=client).payload.read()
    check(len(faces) == 2304 * 12, "faces (binary): 2304 int32 triples")

    cast = api("proximity.sphere_cast_binary").sync(scene_id, client=client, radius=0.1, body=octets(rays))
    check(len(cast.payload.read()) == 88, "sphere cast (binary): 2 records of 44 bytes")
    inside = api("proximity.contains_binary").sync(scene_id, client=client, body=octets(struct.pack("<6f", 1, 0, 0,
                                                                                                     0, 0, 0)))
    check(len(inside.payload.read()) == 16, "contains (binary): 2 records of 8 bytes")
    image = api("render.render_scene").sync(scene_id, client=client, width=64, height=48)
    check(image.payload.read()[1:4] == b"PNG", "render: a PNG")
    glb = api("export.export_scene").sync(scene_id, client=client)
    check(glb.payload.read()[:4] == b"glTF", "export: a GLB")
    return done


#: What both sessions do, in order (the TypeScript one prints "ok <step>").
STEPS = ["upload: a scene of 2304 triangles", "pick: t 4.658979256406773 on triangle 12", "batch (JSON)",
         "batch (binary): 2 records of 32 bytes", "select: the torus", "closest (JSON)", "closest (binary)",
         "move the torus by 2 in x", "a zero direction: 422 saying so", "add an instance",
         "batch edit (JSON list)", "batch moves (binary)", "vertices (binary): 1152 float32 triples",
         "vertices (JSON) as the binary ones", "vertices scaled by 1.5 (binary)",
         "faces (binary): 2304 int32 triples", "sphere cast (binary): 2 records of 44 bytes",
         "contains (binary): 2 records of 8 bytes", "render: a PNG", "export: a GLB"]


def test_openapi_python_client(server, spec_file, tmp_path, monkeypatch):
    """openapi-python-client at its defaults: every module imports, the README's session runs."""
    if importlib.util.find_spec("openapi_python_client") is None:
        pytest.skip("openapi-python-client is not installed (the test extra: pip install -e '.[test]')")
    # Its post hooks run ruff, installed beside it.
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    generated = run([sys.executable, "-m", "openapi_python_client", "generate", "--path", str(spec_file),
                     "--output-path", str(tmp_path / "client")], tmp_path, env)
    assert generated.returncode == 0, generated.stdout + generated.stderr
    # Every operation and schema generated: the generator warns about what it leaves out.
    assert "Warning" not in generated.stdout + generated.stderr, generated.stdout + generated.stderr

    monkeypatch.syspath_prepend(str(tmp_path / "client"))
    # The generated package takes the official client's name (clients/python, installed by make test):
    # forget that one while the generated one is imported.
    for name in [name for name in sys.modules if name == "bvh_pick_client" or name.startswith("bvh_pick_client.")]:
        monkeypatch.delitem(sys.modules, name)
    importlib.invalidate_caches()
    package = importlib.import_module("bvh_pick_client")
    assert Path(package.__file__).is_relative_to(tmp_path), package.__file__
    try:
        modules = [importlib.import_module(module.name)
                   for module in pkgutil.walk_packages(package.__path__, "bvh_pick_client.")]
        assert len(modules) > 100
        assert python_session("bvh_pick_client", server) == STEPS
    finally:
        for name in [name for name in sys.modules if name.split(".")[0] == "bvh_pick_client"]:
            del sys.modules[name]


def node_modules() -> None:
    """``npm ci`` in tests/generators unless its node_modules is already what package-lock.json pins."""
    for program in ("node", "npm"):
        if shutil.which(program) is None:
            pytest.skip(f"{program} is not installed (Node.js 20 runs the TypeScript generator and tsc)")
    installed = GENERATORS / "node_modules" / ".package-lock.json"
    if installed.exists() and installed.stat().st_mtime >= (GENERATORS / "package-lock.json").stat().st_mtime:
        return
    done = run(["npm", "ci", "--no-audit", "--no-fund"], GENERATORS)
    if done.returncode != 0:
        pytest.skip(f"npm ci in tests/generators failed (is the npm registry reachable?): "
                    f"{(done.stderr or done.stdout).strip().splitlines()[-1]}")


def test_openapi_typescript_fetch(server, spec_file, tmp_path):
    """openapi-typescript at its defaults with openapi-fetch: ``tsc --strict`` finds no error, the
    README's session runs."""
    node_modules()
    work = tmp_path / "ts"
    work.mkdir()
    (work / "node_modules").symlink_to(GENERATORS / "node_modules", target_is_directory=True)
    for name in ("tsconfig.json", "session.ts"):
        shutil.copy(GENERATORS / name, work / name)
    (work / "package.json").write_text('{"type": "module"}', encoding="utf-8")
    tools = GENERATORS / "node_modules" / ".bin"
    generated = run([str(tools / "openapi-typescript"), str(spec_file), "-o", "schema.ts"], work)
    assert generated.returncode == 0, generated.stdout + generated.stderr
    compiled = run([str(tools / "tsc"), "-p", "tsconfig.json"], work)
    assert compiled.returncode == 0, f"tsc --strict:\n{compiled.stdout}{compiled.stderr}"
    assert json.loads((work / "tsconfig.json").read_text())["compilerOptions"]["strict"] is True

    session = run(["node", str(work / "out" / "session.js"), server, str(TORUS)], work, timeout=300)
    assert session.returncode == 0, session.stdout + session.stderr
    assert [line.removeprefix("ok ") for line in session.stdout.splitlines()] == STEPS
