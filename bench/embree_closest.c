/* Embree's point query as the closest-point benchmark's anchor
 * (bench/closest.py, --embree-point-query): rtcPointQuery over a robust
 * Embree 3 scene of the mesh, one point at a time on one thread, with a
 * callback that measures each candidate triangle exactly, in double, and
 * shrinks the query's radius (as Embree's own closest-point tutorial does,
 * there in float). Built against Debian's libembree-dev.
 *
 * The triangle test is Ericson's (Real-Time Collision Detection, §5.1.5):
 * the nearest point's Voronoi region of the triangle decided by the signs
 * of dot products of the edges with the point, vertex regions first, then
 * edge regions, else the face. A zero-area triangle falls back to its three
 * edges.
 *
 * Input, one binary file (little-endian): uint32 V, F, N; V * 3 float32
 * vertices; F * 3 uint32 faces; N * 3 float64 points. argv[2]: runs.
 * Output: "rate <best points/s> <median points/s>" on stdout, and argv[3]
 * gets N float64 distances then N uint32 triangles of the last run.
 */

#include "embree_common.h"
#include <math.h>

struct mesh {
    const float *vertices;
    const uint32_t *faces;
};

struct query_state {
    const struct mesh *mesh;
    double px, py, pz;
    double slack; /* the radius's padding: float rounding of the point */
    double best_d2;
    uint32_t triangle;
};

static double dot(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static double segment_d2(const double *p, const double *a, const double *b)
{
    double e[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
    double ap[3] = {p[0] - a[0], p[1] - a[1], p[2] - a[2]};
    double length2 = dot(e, e), s = 0.0;
    if (length2 > 0.0) {
        s = dot(ap, e) / length2;
        s = s < 0.0 ? 0.0 : (s > 1.0 ? 1.0 : s);
    }
    double d[3] = {a[0] + s * e[0] - p[0], a[1] + s * e[1] - p[1], a[2] + s * e[2] - p[2]};
    return dot(d, d);
}

static double distance2(const double *p, const double *q)
{
    double d[3] = {p[0] - q[0], p[1] - q[1], p[2] - q[2]};
    return dot(d, d);
}

/* Squared distance from p to triangle abc by Ericson's regions. */
static double triangle_d2(const double *p, const double *a, const double *b, const double *c)
{
    double ab[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
    double ac[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    double ap[3] = {p[0] - a[0], p[1] - a[1], p[2] - a[2]};
    double d1 = dot(ab, ap), d2 = dot(ac, ap);
    if (d1 <= 0.0 && d2 <= 0.0)
        return distance2(p, a);
    double bp[3] = {p[0] - b[0], p[1] - b[1], p[2] - b[2]};
    double d3 = dot(ab, bp), d4 = dot(ac, bp);
    if (d3 >= 0.0 && d4 <= d3)
        return distance2(p, b);
    double vc = d1 * d4 - d3 * d2;
    if (vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0)
        return segment_d2(p, a, b);
    double cp[3] = {p[0] - c[0], p[1] - c[1], p[2] - c[2]};
    double d5 = dot(ab, cp), d6 = dot(ac, cp);
    if (d6 >= 0.0 && d5 <= d6)
        return distance2(p, c);
    double vb = d5 * d2 - d1 * d6;
    if (vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0)
        return segment_d2(p, a, c);
    double va = d3 * d6 - d5 * d4;
    if (va <= 0.0 && d4 - d3 >= 0.0 && d5 - d6 >= 0.0)
        return segment_d2(p, b, c);
    double sum = va + vb + vc;
    if (!(sum > 0.0)) {
        double best = segment_d2(p, a, b), d = segment_d2(p, a, c);
        best = d < best ? d : best;
        d = segment_d2(p, b, c);
        return d < best ? d : best;
    }
    double v = vb / sum, w = vc / sum;
    double q[3] = {a[0] + v * ab[0] + w * ac[0], a[1] + v * ab[1] + w * ac[1], a[2] + v * ab[2] + w * ac[2]};
    return distance2(p, q);
}

static bool visit_triangle(struct RTCPointQueryFunctionArguments *args)
{
    struct query_state *state = args->userPtr;
    const uint32_t *face = state->mesh->faces + 3 * (size_t)args->primID;
    double corner[3][3];
    for (int k = 0; k < 3; k++)
        for (int c = 0; c < 3; c++)
            corner[k][c] = state->mesh->vertices[3 * (size_t)face[k] + c];
    double p[3] = {state->px, state->py, state->pz};
    double d2 = triangle_d2(p, corner[0], corner[1], corner[2]);
    if (d2 < state->best_d2) {
        state->best_d2 = d2;
        state->triangle = args->primID;
        /* Rounded up and padded, so that the float culling never drops a
         * box that holds something nearer than the double answer. */
        float radius = nextafterf((float)(sqrt(d2) * (1.0 + 1e-6) + state->slack), INFINITY);
        if (radius < args->query->radius) {
            args->query->radius = radius;
            return true;
        }
    }
    return false;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: embree_closest INPUT RUNS OUTPUT\n");
        return 2;
    }
    FILE *file = open_input(argv[1]);
    uint32_t *header = read_exactly(file, 3 * sizeof(uint32_t));
    uint32_t v = header[0], f = header[1], n = header[2];
    float *vertices = read_exactly(file, 3 * sizeof(float) * (size_t)v);
    uint32_t *faces = read_exactly(file, 3 * sizeof(uint32_t) * (size_t)f);
    double *points = read_exactly(file, 3 * sizeof(double) * (size_t)n);
    fclose(file);
    int runs = atoi(argv[2]);

    RTCDevice device = rtcNewDevice(NULL);
    RTCScene scene = robust_mesh_scene(device, v, f, vertices, faces);
    double scale = 0.0;
    for (size_t i = 0; i < 3 * (size_t)v; i++)
        scale = fabs(vertices[i]) > scale ? fabs(vertices[i]) : scale;

    struct mesh mesh = {vertices, faces};
    double *distance = malloc(sizeof(double) * n), *seconds = malloc(sizeof(double) * runs);
    uint32_t *triangle = malloc(sizeof(uint32_t) * n);
    for (int run = 0; run < runs; run++) {
        double start = now();
        for (uint32_t i = 0; i < n; i++) {
            const double *p = points + 3 * (size_t)i;
            struct query_state state = {&mesh, p[0], p[1], p[2], 1e-6 * (scale + fabs(p[0]) + fabs(p[1]) + fabs(p[2])),
                                        INFINITY, RTC_INVALID_GEOMETRY_ID};
            struct RTCPointQuery query;
            query.x = (float)p[0];
            query.y = (float)p[1];
            query.z = (float)p[2];
            query.time = 0.0f;
            query.radius = INFINITY;
            struct RTCPointQueryContext context;
            rtcInitPointQueryContext(&context);
            rtcPointQuery(scene, &query, &context, visit_triangle, &state);
            distance[i] = sqrt(state.best_d2);
            triangle[i] = state.triangle;
        }
        seconds[run] = now() - start;
    }
    qsort(seconds, runs, sizeof(double), by_value);
    printf("rate %.1f %.1f\n", n / seconds[0], n / seconds[runs / 2]);
    FILE *out = fopen(argv[3], "wb");
    if (!out || fwrite(distance, sizeof(double), n, out) != n || fwrite(triangle, sizeof(uint32_t), n, out) != n) {
        perror(argv[3]);
        return 2;
    }
    fclose(out);
    rtcReleaseScene(scene);
    rtcReleaseDevice(device);
    return 0;
}
