"""Lasso selection on the city block: agreement with the naive reference, and time.

    python -m bench.lasso                    # 1,000 random polygons
    python -m bench.lasso --polygons 100     # fewer

The scene is ``sample_meshes/city_block.glb`` (as ``bench.idbuffer`` builds
it), seen through two 1280 x 720 cameras: the view ``/render`` frames by
default, and one standing in the street among the buildings with a near
plane at 5 m and a far plane at 150 m, which cut many triangles. Each
polygon is a random simple one (``testkit.reference.lasso.star_polygon``:
3 to 40 points at sorted random angles, concave in general) somewhere over
the image, half of them over each camera. For every polygon,
``Scene.select(lasso=...)`` in ``"triangles"`` mode, crossing and window,
is compared with ``testkit.reference.lasso`` (near/far clipping, PNPOLY and
Sutherland-Hodgman areas in float64, per triangle). A polygon agrees when
both of its triangle sets are exactly the reference's; the bar (issue 17)
is 100%. Time: the engine's selections alone, per polygon.
"""

import argparse
import time

import numpy as np

import bvh
from bench.idbuffer import city_block
from service.queries.rendering import frame_bounds
from testkit.reference.lasso import ProjectedTriangles, star_polygon, world_triangles

WIDTH, HEIGHT = 1280, 720


def cameras(scene) -> dict:
    framed = frame_bounds(scene.bounds, (0.0, 0.0, 1.0), 45.0, WIDTH, HEIGHT).camera()
    street = bvh.Camera.pinhole([-60.0, -40.0, 6.0], [40.0, 20.0, 10.0], [0.0, 0.0, 1.0], 70.0, WIDTH, HEIGHT,
                                near=5.0, far=150.0)
    return {"framed": framed, "street": street}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--polygons", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args()
    scene = city_block()
    triangles, objects, faces = world_triangles(scene)
    rng = np.random.default_rng(args.seed)
    views = cameras(scene)
    print(f"city block: {len(scene)} objects, {len(triangles)} triangles; {args.polygons} random polygons "
          f"over {WIDTH}x{HEIGHT} images, crossing and window each")
    agreed = 0
    compared = 0
    engine_seconds = 0.0
    selected = {"crossing": 0, "window": 0}
    for index, (name, camera) in enumerate(views.items()):
        reference = ProjectedTriangles(camera, triangles)
        count = args.polygons // len(views) + (index < args.polygons % len(views))
        print(f"  {name}: {count} polygons, {int(reference.cut.sum())} triangles cut by the near or far plane")
        for _ in range(count):
            polygon = star_polygon(rng, rng.uniform([0, 0], [WIDTH, HEIGHT]), rng.uniform(20, 600),
                                   int(rng.integers(3, 41)))
            lasso = bvh.Lasso(camera, polygon)
            agrees = True
            for containment in ("crossing", "window"):
                start = time.perf_counter()
                got = scene.select(mode="triangles", containment=containment, lasso=lasso)
                engine_seconds += time.perf_counter() - start
                expected = reference.select(polygon, containment == "window")
                want = set(zip(objects[expected].tolist(), faces[expected].tolist()))
                agrees &= set(zip(got.object.tolist(), got.triangle.tolist())) == want
                selected[containment] += len(want)
            agreed += agrees
            compared += 1
    print(f"agreement: {agreed}/{compared} polygons = {100.0 * agreed / compared:.1f}% "
          f"(triangles selected: {selected['crossing']:,} crossing, {selected['window']:,} window)")
    print(f"engine: {1e3 * engine_seconds / (2 * compared):.2f} ms per selection")


if __name__ == "__main__":
    main()
