"""Alpha-tested picking (issue 17): the two bars.

    python -m bench.alpha                     # 10,000 texel rays; foliage of 2,000 cards, 200,000 rays
    python -m bench.alpha --cards 500 --rays 50000

1. Agreement: a unit card with a random 100 x 100 mask (each texel 0 or 255,
   MASK, cutoff 0.5) in front of an opaque wall, loaded from a generated GLB
   through ``bvh.load``; one ray along -z through the centre of each of its
   10,000 texels (half a texel from any border, so no rounding decides).
   Bar: every ray through a transparent texel reaches the wall, every ray
   through an opaque one hits the card.
2. Rate: a foliage-like scene of ``--cards`` leaf cards (two triangles each,
   64 x 64 leafy masks covering about half of each card, randomly turned and
   placed in a 10 x 10 x 10 crown over an opaque ground) traced by
   ``--rays`` random rays from around the crown towards its middle, closest
   hit on both threads (``Scene.intersect``), best of five rounds that time
   each way once in turn. The same scene
   four ways: alpha-tested; with ``alpha_test=False``; built without its
   materials; and with fully opaque masks (every candidate hit sampled, as
   alpha-tested, but every ray stopping where the stripped scene's does).
   Bar: alpha-tested >= 0.7 x the materials-stripped scene. The alpha-tested
   rays see through the leaves, so they go further and meet more cards than
   the others: the ratio is the cost of the alpha test (opaque masks against
   stripped) times the cost of the longer walks.
"""

import argparse
import time

import numpy as np

import bvh
from bvh import AlphaMaterial, MeshAlpha
from testkit.scenes import alpha as alpha_scenes
from testkit.scenes.alpha import quad, write_glb

MASK_SIZE = 100


def agreement(seed: int = 17) -> None:
    rng = np.random.default_rng(seed)
    mask = np.where(rng.random((MASK_SIZE, MASK_SIZE)) < 0.5, 0, 255).astype(np.uint8)
    card = quad(0.0, 0.0, 0.0)
    card["material"] = 0
    wall = quad(-1.0, -1.0, -1.0, 3.0, 3.0)
    glb = write_glb([[card], [wall]], [{"alphaMode": "MASK", "mask": mask}],
                    [{"mesh": 0, "name": "card"}, {"mesh": 1, "name": "wall"}])
    scene = bvh.load(glb, file_type="glb")
    ids = {info.name: info.id for info in scene.objects}
    centres = (np.arange(MASK_SIZE) + 0.5) / MASK_SIZE
    gx, gy = np.meshgrid(centres, centres)
    origins = np.column_stack([gx.ravel(), gy.ravel(), np.full(gx.size, 5.0)])
    directions = np.tile([0.0, 0.0, -1.0], (origins.shape[0], 1))
    # glTF: texture coordinate (0, 0) is the image's top left; the card's t runs down from y = 1.
    opaque = mask[np.floor((1.0 - origins[:, 1]) * MASK_SIZE).astype(int),
                  np.floor(origins[:, 0] * MASK_SIZE).astype(int)] == 255
    hits = scene.intersect(origins, directions)
    passed = int((hits.object[~opaque] == ids["wall"]).sum())
    stopped = int((hits.object[opaque] == ids["card"]).sum())
    print(f"texel rays: {origins.shape[0]}; through transparent texels reaching the wall: "
          f"{passed}/{int((~opaque).sum())}; through opaque texels hitting the card: {stopped}/{int(opaque.sum())}")
    print("  bar (100% both):", "met" if passed == (~opaque).sum() and stopped == opaque.sum() else "NOT MET")


def foliage(cards: int, seed: int = 5):
    """``(vertices, faces, alpha)`` of ``cards`` leaf cards in a crown, and a ground quad."""
    return alpha_scenes.foliage(cards, seed)


def best_rates(functions: dict, rays: int, rounds: int = 5) -> dict:
    """Rays per second of each function, the best of ``rounds`` rounds that
    time each once in turn (so that a change of load hits them alike)."""
    for function in functions.values():
        function()
    best = dict.fromkeys(functions, np.inf)
    for _ in range(rounds):
        for name, function in functions.items():
            start = time.perf_counter()
            function()
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: rays / seconds for name, seconds in best.items()}


def rate(cards: int, count: int) -> None:
    vertices, faces, alpha = foliage(cards)
    tested = bvh.Scene()
    tested.add_instance(tested.add_mesh(vertices, faces, alpha=alpha))
    stripped = bvh.Scene()
    stripped.add_instance(stripped.add_mesh(vertices, faces))
    # One texel short of opaque, so that the mask is kept (a fully opaque image is dropped as no mask).
    full = np.full(alpha.materials[0].mask.shape, 255, np.uint8)
    full[0, 0] = 254
    sampled = bvh.Scene()
    sampled.add_instance(sampled.add_mesh(vertices, faces, alpha=alpha._replace(
        materials=[AlphaMaterial("MASK", mask=full) for _ in alpha.materials])))
    rng = np.random.default_rng(3)
    directions = rng.normal(size=(count, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    origins = -12.0 * directions
    directions += rng.uniform(-0.3, 0.3, (count, 3))
    hit_tested = tested.intersect(origins, directions)
    hit_plain = stripped.intersect(origins, directions)
    through = float(np.mean(hit_tested.t > hit_plain.t))
    rates = best_rates({"alpha-tested": lambda: tested.intersect(origins, directions),
                        "alpha_test=False": lambda: tested.intersect(origins, directions, alpha_test=False),
                        "materials stripped": lambda: stripped.intersect(origins, directions),
                        "opaque masks": lambda: sampled.intersect(origins, directions)}, count)
    print(f"foliage: {cards} cards ({faces.shape[0]} triangles), {count} rays, closest hit, both threads; "
          f"{through:.0%} of the rays see past a leaf's transparent texels")
    for name, value in rates.items():
        print(f"  {name:20} {value / 1e6:8.3f} M rays/s")
    ratio = rates["alpha-tested"] / rates["materials stripped"]
    print(f"  alpha-tested / stripped = {ratio:.2f} (bar >= 0.7: {'met' if ratio >= 0.7 else 'NOT MET'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=2000)
    parser.add_argument("--rays", type=int, default=1_000_000)
    args = parser.parse_args()
    agreement()
    rate(args.cards, args.rays)


if __name__ == "__main__":
    main()
