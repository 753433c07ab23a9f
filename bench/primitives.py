"""Timings of ``bvh.primitives``: ``python -m bench.primitives``.

Every ray test against one shape on the same million random rays (a fifth
axis-aligned), best of several runs, one thread (the kernels are serial).
"call" is the public function (validation, output arrays, inf conversion);
"kernel" the compiled loop alone on validated arrays. Then the triangle
methods side by side on one triangle, and the angle-sum point-in-triangle
test against barycentrics: speed, and misclassifications near the edges.
"""

import math
import os
import platform
import time

import numba
import numpy as np

import bvh.primitives as P
from bvh._jit import FAR, jit
from bvh.primitives import point_tests, rays, segments

N = 1_000_000
REPEATS = 5


def best_of(fn, repeats=REPEATS):
    fn()
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def make_rays(rng, n, center, size):
    center = np.asarray(center, float)
    origins = center + rng.uniform(-2, 2, (n, 3)) * size
    targets = center + rng.uniform(-0.75, 0.75, (n, 3)) * size
    directions = targets - origins
    m = n // 5
    rows = np.arange(m)
    axis = rng.integers(0, 3, m)
    aligned = np.zeros((m, 3))
    aligned[rows, axis] = np.sign(targets[rows, axis] - origins[rows, axis]) + (targets[rows, axis] == origins[rows, axis])
    origins[:m] = targets[:m]
    origins[rows, axis] -= aligned[rows, axis] * 3 * size
    directions[:m] = aligned
    return np.ascontiguousarray(origins), np.ascontiguousarray(directions)


@jit
def _barycentric_kernel(points, a, e1, e2, out):
    """Inside test by barycentrics (the comparison for the angle sum)."""
    d00 = e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]
    d01 = e1[0] * e2[0] + e1[1] * e2[1] + e1[2] * e2[2]
    d11 = e2[0] * e2[0] + e2[1] * e2[1] + e2[2] * e2[2]
    inv = 1.0 / (d00 * d11 - d01 * d01)
    for i in range(points.shape[0]):
        rx = points[i, 0] - a[0]
        ry = points[i, 1] - a[1]
        rz = points[i, 2] - a[2]
        d20 = rx * e1[0] + ry * e1[1] + rz * e1[2]
        d21 = rx * e2[0] + ry * e2[1] + rz * e2[2]
        u = (d11 * d20 - d01 * d21) * inv
        v = (d00 * d21 - d01 * d20) * inv
        out[i] = u >= 0.0 and v >= 0.0 and u + v <= 1.0


@jit
def _bary_one(px, py, pz, a, e1, e2, d00, d01, d11, inv):
    rx = px - a[0]
    ry = py - a[1]
    rz = pz - a[2]
    d20 = rx * e1[0] + ry * e1[1] + rz * e1[2]
    d21 = rx * e2[0] + ry * e2[1] + rz * e2[2]
    u = (d11 * d20 - d01 * d21) * inv
    v = (d00 * d21 - d01 * d20) * inv
    return u >= 0.0 and v >= 0.0 and u + v <= 1.0


@jit
def _plane_then_point_kernel(origins, directions, a, b, c, n, tol, use_angles, hit):
    """Per segment: the plane hit (t in [0, 1]), then the inside test on the point."""
    e1 = b - a
    e2 = c - a
    d00 = e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]
    d01 = e1[0] * e2[0] + e1[1] * e2[1] + e1[2] * e2[2]
    d11 = e2[0] * e2[0] + e2[1] * e2[1] + e2[2] * e2[2]
    inv = 1.0 / (d00 * d11 - d01 * d01)
    for i in range(origins.shape[0]):
        ox = origins[i, 0]
        oy = origins[i, 1]
        oz = origins[i, 2]
        dx = directions[i, 0]
        dy = directions[i, 1]
        dz = directions[i, 2]
        t = rays.plane_one(ox, oy, oz, dx, dy, dz, a[0], a[1], a[2], n[0], n[1], n[2], 0.0, 1.0)
        if t >= FAR:
            hit[i] = False
            continue
        px = ox + t * dx
        py = oy + t * dy
        pz = oz + t * dz
        if use_angles:
            hit[i] = point_tests._angles_one(px, py, pz, a, b, c, tol)
        else:
            hit[i] = _bary_one(px, py, pz, a, e1, e2, d00, d01, d11, inv)


def ms_per_million(seconds, n=N):
    return 1e3 * seconds * 1e6 / n


def section(title):
    print()
    print(title)
    print("-" * len(title))


def bench_ray_tests(rng):
    section(f"Ray tests, ms per million rays (N = {N:,}, best of {REPEATS})")
    tri = (np.array([-1.0, -0.8, 0.1]), np.array([1.2, -0.6, -0.2]), np.array([0.1, 1.1, 0.3]))
    hexagon = np.array([[math.cos(k * math.pi / 3), math.sin(k * math.pi / 3), 0.0] for k in range(6)])
    star = np.array([[(1.0 if k % 2 == 0 else 0.4) * math.cos(k * math.pi / 5),
                      (1.0 if k % 2 == 0 else 0.4) * math.sin(k * math.pi / 5), 0.0] for k in range(10)])
    axes = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    if np.linalg.det(axes) < 0:
        axes[2] *= -1
    o, d = make_rays(rng, N, [0, 0, 0], 1.0)
    t = np.empty(N)
    t2 = np.empty(N)
    u = np.empty(N)
    v = np.empty(N)
    nrm = np.empty((N, 3))

    a, e1, e2, un, n2 = rays.triangle_frame(*tri)
    poly = {name: _polygon_args(verts) for name, verts in
            (("triangle", np.array(tri)), ("hexagon", hexagon), ("star10", star))}
    matrix = P.triangle_matrix(*tri)
    q = o + d
    plane_point = np.array([0, 0, 0.1])
    plane_normal = np.array([0.2, 0.3, 1.0])
    cases = [
        ("ray_plane", lambda: P.ray_plane(o, d, plane_point, plane_normal),
         lambda: rays._ray_plane_kernel(o, d, plane_point, plane_normal / np.linalg.norm(plane_normal),
                                        0.0, FAR, t, nrm)),
        ("ray_sphere", lambda: P.ray_sphere(o, d, [0.1, 0, 0], 0.8),
         lambda: rays._ray_sphere_kernel(o, d, np.array([0.1, 0, 0]), 0.8, 0.0, FAR, t, nrm)),
        ("ray_aabb", lambda: P.ray_aabb(o, d, [-0.7, -0.5, -0.6], [0.6, 0.8, 0.5]),
         lambda: rays._ray_aabb_kernel(o, d, np.array([-0.7, -0.5, -0.6]), np.array([0.6, 0.8, 0.5]), 0.0, FAR, t, t2, nrm)),
        ("ray_obb", lambda: P.ray_obb(o, d, [0, 0, 0], axes, [0.8, 0.5, 0.3]),
         lambda: rays._ray_obb_kernel(o, d, np.zeros(3), axes, np.array([0.8, 0.5, 0.3]), 0.0, FAR, t, nrm)),
        ("ray_triangle (two-sided)", lambda: P.ray_triangle(o, d, *tri),
         lambda: rays._ray_triangle_kernel(o, d, a, e1, e2, un, n2, 0.0, FAR, False, t, u, v, nrm)),
        ("ray_triangle (culling)", lambda: P.ray_triangle(o, d, *tri, cull_backfaces=True),
         lambda: rays._ray_triangle_kernel(o, d, a, e1, e2, un, n2, 0.0, FAR, True, t, u, v, nrm)),
        ("segment_triangle (cached matrix)", lambda: P.segment_triangle_matrix(o, q, matrix),
         lambda: segments._segment_kernel(o, q, matrix, un, t, u, v, nrm)),
    ]
    for name in ("triangle", "hexagon", "star10"):
        pt, nn, drop, xs, ys = poly[name]
        verts = np.array(tri) if name == "triangle" else (hexagon if name == "hexagon" else star)
        cases.append((f"ray_polygon ({name})", lambda verts=verts: P.ray_polygon(o, d, verts),
                      lambda pt=pt, nn=nn, drop=drop, xs=xs, ys=ys:
                      rays._ray_polygon_kernel(o, d, pt, nn, drop, xs, ys, 0.0, FAR, t, nrm)))
    print(f"{'test':34s} {'call':>8s} {'kernel':>8s} {'hit rate':>9s}")
    for name, call, kernel in cases:
        hits = call()
        rate = np.isfinite(hits[0]).mean()
        print(f"{name:34s} {ms_per_million(best_of(call)):8.1f} {ms_per_million(best_of(kernel)):8.1f} {rate:9.1%}")
    return o, d, tri


def bench_triangle_methods(o, d, tri):
    section("Triangle methods side by side: the same million segments (length 4) and triangle")
    a, b, c = tri
    seg = np.ascontiguousarray(d / np.linalg.norm(d, axis=1, keepdims=True) * 4.0)
    q = o + seg
    matrix = P.triangle_matrix(a, b, c)
    a_, e1, e2, unit, n2 = rays.triangle_frame(a, b, c)
    n = len(o)
    t = np.empty(n)
    u = np.empty(n)
    v = np.empty(n)
    nrm = np.empty((n, 3))
    hit = np.empty(n, np.bool_)
    pp, pn, drop, xs, ys = _polygon_args(np.array(tri))
    tol = point_tests.ANGLE_SUM_TOLERANCE

    def kernel_hits(run, out):
        def go():
            run()
            return out < FAR if out.dtype != np.bool_ else out.copy()
        return go

    methods = [
        ("Möller–Trumbore (ray_triangle, tmax=1)",
         lambda: np.isfinite(P.ray_triangle(o, seg, a, b, c, tmax=1.0).t),
         kernel_hits(lambda: rays._ray_triangle_kernel(o, seg, a_, e1, e2, unit, n2, 0.0, 1.0, False, t, u, v, nrm), t)),
        ("matrix method (segment_triangle)",
         lambda: np.isfinite(P.segment_triangle(o, q, a, b, c).t),
         kernel_hits(lambda: segments._segment_kernel(o, q, matrix, unit, t, u, v, nrm), t)),
        ("crossings (ray_polygon on the triangle)",
         lambda: np.isfinite(P.ray_polygon(o, seg, [a, b, c], tmax=1.0).t),
         kernel_hits(lambda: rays._ray_polygon_kernel(o, seg, pp, pn, drop, xs, ys, 0.0, 1.0, t, nrm), t)),
        ("plane + angle sum (point_in_triangle_angles)", None,
         kernel_hits(lambda: _plane_then_point_kernel(o, seg, a, b, c, unit, tol, True, hit), hit)),
        ("plane + barycentrics", None,
         kernel_hits(lambda: _plane_then_point_kernel(o, seg, a, b, c, unit, tol, False, hit), hit)),
    ]
    print(f"{'method':46s} {'call':>7s} {'kernel':>7s} {'hits':>8s} {'differ from MT':>15s}")
    reference = None
    for name, call, kernel in methods:
        hits = kernel()
        if reference is None:
            reference = hits
        call_ms = f"{ms_per_million(best_of(call)):7.1f}" if call else f"{'-':>7s}"
        print(f"{name:46s} {call_ms} {ms_per_million(best_of(kernel)):7.1f} {int(hits.sum()):8d} "
              f"{int((hits != reference).sum()):15d}")
    print("(ms per million segments; 'call' includes validation and output arrays)")


def _polygon_args(vertices):
    vv, point, normal, drop = rays.polygon_plane(vertices)
    keep = [k for k in range(3) if k != drop]
    return point, normal, drop, np.ascontiguousarray(vv[:, keep[0]]), np.ascontiguousarray(vv[:, keep[1]])


def bench_angle_sum():
    section("Angle sum against barycentrics: point-in-triangle on in-plane points")
    rng = np.random.default_rng(3)
    a, b, c = np.array([0.0, 0, 0]), np.array([1.0, 0.1, 0.2]), np.array([0.2, 0.9, -0.3])
    w = rng.dirichlet([1, 1, 1], N)
    pts = np.ascontiguousarray(w[:, :1] * a + w[:, 1:2] * b + w[:, 2:] * c)
    pts += rng.normal(size=(N, 1)) * 0.2 * (b - a)
    out = np.empty(N, np.bool_)
    fa = point_tests.ANGLE_SUM_TOLERANCE
    t_angles = best_of(lambda: point_tests._angles_kernel(pts, a, b, c, fa, out))
    t_bary = best_of(lambda: _barycentric_kernel(pts, a, b - a, c - a, out))
    print(f"kernel time, ms per million points: angle sum {ms_per_million(t_angles):.1f}, "
          f"barycentrics {ms_per_million(t_bary):.1f} ({t_angles / t_bary:.1f}x slower)")
    print()
    print("Misclassified points at distance delta*L from an edge (L = edge length),")
    n = 100_000
    print(f"{n:,} points per row, spread along all three edges:")
    header = f"{'delta':>8s} {'side':>8s} {'angles tol=1e-6':>16s} {'tol=1e-8':>9s} {'tol=1e-10':>10s} {'barycentric':>12s}"
    print(header)
    verts = np.array([a, b, c])
    normal = np.cross(b - a, c - a)
    normal /= np.linalg.norm(normal)
    for delta in (1e-3, 1e-5, 1e-6, 1e-7, 1e-8, 1e-10, 1e-12):
        for inside in (True, False):
            k = rng.integers(0, 3, n)
            p0 = verts[k]
            p1 = verts[(k + 1) % 3]
            edge = p1 - p0
            length = np.linalg.norm(edge, axis=1, keepdims=True)
            inward = np.cross(normal, edge) / length     # counter-clockwise: left of the edge is inside
            s = rng.uniform(0.05, 0.95, (n, 1))
            pts = np.ascontiguousarray(p0 + s * edge + (1 if inside else -1) * delta * length * inward)
            row = []
            for tol in (1e-6, 1e-8, 1e-10):
                got = np.empty(n, np.bool_)
                point_tests._angles_kernel(pts, a, b, c, tol, got)
                row.append((got != inside).mean())
            got = np.empty(n, np.bool_)
            _barycentric_kernel(pts, a, b - a, c - a, got)
            bary = (got != inside).mean()
            side = "inside" if inside else "outside"
            print(f"{delta:8.0e} {side:>8s} {row[0]:16.2%} {row[1]:9.2%} {row[2]:10.2%} {bary:12.2%}")


def bench_volumes(rng):
    section("Bounding volumes, ms per million points")
    pts = rng.uniform(-1, 1, (N, 3)) * [8.0, 1.5, 0.5]
    q = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    pts = np.ascontiguousarray(pts @ q)
    bmin, bmax = P.aabb_of(pts)
    aabb_volume = float(np.prod(bmax - bmin))
    rows = [
        ("aabb_of", lambda: P.aabb_of(pts), None),
        ("bounding_sphere ritter", lambda: P.bounding_sphere(pts, "ritter"), "r"),
        ("bounding_sphere aabb", lambda: P.bounding_sphere(pts, "aabb"), "r"),
        ("bounding_sphere welzl", lambda: P.bounding_sphere(pts, "welzl"), "r"),
        ("obb_of", lambda: P.obb_of(pts), "obb"),
    ]
    for name, fn, kind in rows:
        seconds = best_of(fn, repeats=2)
        result = fn()
        note = ""
        if kind == "r":
            note = f"radius {result[1]:.4f}"
        elif kind == "obb":
            note = f"volume {np.prod(2 * result[2]) / aabb_volume:.3f} of the AABB's (rotated 16 x 3 x 1 cloud)"
        print(f"{name:24s} {ms_per_million(seconds):8.1f}  {note}")


def main():
    print(f"bvh.primitives benchmark: {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, numba {numba.__version__}, numpy {np.__version__}, one thread")
    start = time.perf_counter()
    rng = np.random.default_rng(2024)
    o, d, tri = bench_ray_tests(rng)
    bench_triangle_methods(o, d, tri)
    bench_angle_sum()
    bench_volumes(rng)
    print(f"\ntotal {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
