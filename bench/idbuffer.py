"""The ID buffer of the city block at 1920 x 1080: in process and over HTTP.

    python -m bench.idbuffer                 # 5 runs of each
    python -m bench.idbuffer --runs 20 --width 3840 --height 2160

The scene is ``sample_meshes/city_block.glb``, built as the service's sample
scenes are. Two cameras: ``framed`` shows the whole block as ``/render`` and
the viewer do by default (z up, 45° field of view; the block's bounding
sphere fills the view, so most pixels are sky), ``close`` looks at the same
point from 0.3 of that distance, where nearly every pixel lands on a
building or the street. Measured for each, the best and the median of
``--runs`` after a warm-up:

1. ``Scene.id_buffer`` in this process: the server's work (object,
   triangle and depth planes), then with normals and barycentrics;
2. the same plus the answer's bytes as ``/idbuffer`` packs them
   (``service.api.routes.idbuffer``), plain and gzip-compressed (level 1);
3. ``POST /scenes/{id}/idbuffer`` over loopback HTTP against a
   ``python -m service`` started here (one worker, temporary data
   directory), plain and with ``Accept-Encoding: gzip``: the client's wall
   time per request, transfer included.

The bar (issue 17): 1920 x 1080 in at most 0.5 s of server time.
"""

import argparse
import gzip
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import bvh
import sample_meshes
from bench.http import Server, free_port, request, upload
from bvh.io.load import read_scene_description
from service.queries.building import add_file_meshes, place_file_instances
from service.queries.rendering import frame_bounds
from service.api.routes.idbuffer import GZIP_LEVEL

CITY = sample_meshes.path("city_block.glb")


def city_block() -> bvh.Scene:
    description = read_scene_description(CITY)
    scene = bvh.Scene()
    place_file_instances(scene, description, add_file_meshes(scene, description))
    return scene


def timed(function, runs: int) -> tuple[float, float]:
    """Best and median seconds of ``runs`` calls, after one to warm up."""
    function()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def packed(buffer) -> bytes:
    """The planes of an ``/idbuffer`` answer (see ``service.api.routes.idbuffer``)."""
    parts = [buffer.object, buffer.triangle, buffer.depth]
    parts += [part for part in (buffer.barycentric, buffer.normal) if part is not None]
    return b"".join(np.ascontiguousarray(part).data for part in parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--width", type=int, default=1920)
    parser.add_argument("--height", type=int, default=1080)
    parser.add_argument("--no-http", action="store_true", help="in process only")
    args = parser.parse_args()

    scene = city_block()
    framed = frame_bounds(scene.bounds, (0.0, 0.0, 1.0), 45.0, args.width, args.height)
    fields = framed.as_json()
    target = np.array(fields["target"])
    close = {**fields, "position": (target + 0.3 * (np.array(fields["position"]) - target)).tolist()}
    print(f"city block: {len(scene)} objects, {scene.triangle_count} triangles; {args.width}x{args.height} "
          f"= {args.width * args.height:,} pixels")
    views = {"framed": fields, "close": close}
    if args.no_http:
        for name, view in views.items():
            measure(scene, name, view, args, None)
        return
    with tempfile.TemporaryDirectory(prefix="bench-idbuffer-") as directory:
        server = Server(Path(directory) / "data", free_port())
        server.start()
        try:
            scene_id = upload(server.url, CITY)["id"]
            for name, view in views.items():
                measure(scene, name, view, args, (server.url, scene_id))
        finally:
            server.stop()


def measure(scene, name: str, view: dict, args, http) -> None:
    """Print the figures of one view; ``http``: the server's URL and the scene's id there, or None."""
    camera = bvh.Camera.pinhole(view["position"], view["target"], view["up"], view["fov_y_deg"], view["width"],
                                view["height"])
    pixels = args.width * args.height
    buffer = scene.id_buffer(camera)
    print(f"{name} view: {np.mean(buffer.object >= 0):.0%} of the pixels on the block")

    def show(what: str, seconds: tuple[float, float]) -> None:
        print(f"  {what:44} best {seconds[0] * 1e3:7.1f} ms  median {seconds[1] * 1e3:7.1f} ms  "
              f"({pixels / seconds[0] / 1e6:.1f} M pixels/s)")

    show("Scene.id_buffer", timed(lambda: scene.id_buffer(camera), args.runs))
    show("  with normals and barycentrics",
         timed(lambda: scene.id_buffer(camera, normals=True, barycentrics=True), args.runs))
    show("  + the answer's bytes", timed(lambda: packed(scene.id_buffer(camera)), args.runs))
    plain = packed(scene.id_buffer(camera))
    show(f"  + gzip level {GZIP_LEVEL}", timed(
        lambda: gzip.compress(packed(scene.id_buffer(camera)), compresslevel=GZIP_LEVEL, mtime=0), args.runs))
    compressed = gzip.compress(plain, compresslevel=GZIP_LEVEL, mtime=0)
    print(f"  answer: {len(plain) / 1e6:.1f} MB, gzip {len(compressed) / 1e6:.2f} MB")
    if http is None:
        return
    url, scene_id = http
    body = json.dumps(view).encode()
    for label, headers in (("POST /idbuffer over loopback HTTP", {}),
                           ("  Accept-Encoding: gzip", {"Accept-Encoding": "gzip"})):
        headers = {"Content-Type": "application/json", **headers}

        def call():
            status, answer = request(url, "POST", f"/scenes/{scene_id}/idbuffer", body, headers)
            if status != 200:
                raise RuntimeError(f"/idbuffer answered {status}: {answer[:300]!r}")

        show(label, timed(call, args.runs))


if __name__ == "__main__":
    main()
