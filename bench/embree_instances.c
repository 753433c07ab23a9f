/* Embree's own instancing as the scene benchmark's anchor (bench/scene.py,
 * --embree-instances): one mesh, a bare scene of it and a scene of K
 * instances of it, each a two-level Embree scene (RTC_GEOMETRY_TYPE_INSTANCE
 * over the mesh's scene), both RTC_SCENE_FLAG_ROBUST; closest hit by
 * rtcIntersect1, one ray at a time on one thread, as bench.embree_anchor
 * runs embreex. embreex offers no instancing, hence this program, built
 * against Debian's libembree-dev (Embree 3).
 *
 * Input, one binary file (little-endian): uint32 M, K, N; then M meshes, each
 * uint32 V, F, V * 3 float32 vertices, F * 3 uint32 faces; K uint32 mesh
 * indices and K * 12 float32 object-to-world transforms (3 x 4, row major),
 * one per instance; N * 6 float32 rays aimed at the bare first mesh (origin,
 * direction); N * 6 float32 rays aimed at the scene. (bench/scene.py sends
 * one mesh, bench/scale.py four.)
 *
 * Output, one line each: "build <seconds>" (rtcCommitScene of the instances,
 * Embree's own threads), "bare <best> <median> <hit fraction>" and
 * "instances <best> <median> <hit fraction>", rays/s over R runs of each
 * (argv[2]), taken in turns.
 */

#include "embree_common.h"

/* Seconds for one pass over the rays; the number that hit into `hits`. */
static double trace(RTCScene scene, const float *rays, uint32_t n, uint32_t *hits)
{
    struct RTCIntersectContext context;
    rtcInitIntersectContext(&context);
    uint32_t count = 0;
    double start = now();
    for (uint32_t i = 0; i < n; i++) {
        const float *r = rays + 6 * (size_t)i;
        struct RTCRayHit rh;
        rh.ray.org_x = r[0];
        rh.ray.org_y = r[1];
        rh.ray.org_z = r[2];
        rh.ray.dir_x = r[3];
        rh.ray.dir_y = r[4];
        rh.ray.dir_z = r[5];
        rh.ray.tnear = 0.0f;
        rh.ray.tfar = 1e30f;
        rh.ray.time = 0.0f;
        rh.ray.mask = 0xFFFFFFFFu;
        rh.ray.id = i;
        rh.ray.flags = 0;
        rh.hit.geomID = RTC_INVALID_GEOMETRY_ID;
        rh.hit.instID[0] = RTC_INVALID_GEOMETRY_ID;
        rtcIntersect1(scene, &context, &rh);
        count += rh.hit.geomID != RTC_INVALID_GEOMETRY_ID;
    }
    *hits = count;
    return now() - start;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: embree_instances INPUT RUNS\n");
        return 2;
    }
    FILE *file = open_input(argv[1]);
    uint32_t *header = read_exactly(file, 3 * sizeof(uint32_t));
    uint32_t m = header[0], k = header[1], n = header[2];
    RTCDevice device = rtcNewDevice(NULL);
    RTCScene *meshes = malloc(sizeof(RTCScene) * (m ? m : 1));
    for (uint32_t j = 0; j < m; j++) {
        uint32_t *sizes = read_exactly(file, 2 * sizeof(uint32_t));
        float *vertices = read_exactly(file, 3 * sizeof(float) * (size_t)sizes[0]);
        uint32_t *faces = read_exactly(file, 3 * sizeof(uint32_t) * (size_t)sizes[1]);
        meshes[j] = robust_mesh_scene(device, sizes[0], sizes[1], vertices, faces);
        free(sizes);
        free(vertices);
        free(faces);
    }
    uint32_t *mesh_of = read_exactly(file, sizeof(uint32_t) * (size_t)k);
    float *transforms = read_exactly(file, 12 * sizeof(float) * (size_t)k);
    float *mesh_rays = read_exactly(file, 6 * sizeof(float) * (size_t)n);
    float *scene_rays = read_exactly(file, 6 * sizeof(float) * (size_t)n);
    fclose(file);
    int runs = atoi(argv[2]);

    RTCScene mesh = meshes[0];
    RTCScene instances = rtcNewScene(device);
    rtcSetSceneFlags(instances, RTC_SCENE_FLAG_ROBUST);
    double build_start = now();
    for (uint32_t i = 0; i < k; i++) {
        RTCGeometry instance = rtcNewGeometry(device, RTC_GEOMETRY_TYPE_INSTANCE);
        rtcSetGeometryInstancedScene(instance, meshes[mesh_of[i]]);
        rtcSetGeometryTransform(instance, 0, RTC_FORMAT_FLOAT3X4_ROW_MAJOR, transforms + 12 * (size_t)i);
        rtcCommitGeometry(instance);
        rtcAttachGeometry(instances, instance);
        rtcReleaseGeometry(instance);
    }
    rtcCommitScene(instances);
    printf("build %.6f\n", now() - build_start);

    /* In turns, so that a slow spell of the machine falls on both. */
    double *bare = malloc(sizeof(double) * runs), *scene = malloc(sizeof(double) * runs);
    uint32_t bare_hits = 0, scene_hits = 0;
    for (int run = 0; run < runs; run++) {
        bare[run] = trace(mesh, mesh_rays, n, &bare_hits);
        scene[run] = trace(instances, scene_rays, n, &scene_hits);
    }
    qsort(bare, runs, sizeof(double), by_value);
    qsort(scene, runs, sizeof(double), by_value);
    printf("bare %.1f %.1f %.6f\n", n / bare[0], n / bare[runs / 2], (double)bare_hits / n);
    printf("instances %.1f %.1f %.6f\n", n / scene[0], n / scene[runs / 2], (double)scene_hits / n);
    rtcReleaseScene(instances);
    for (uint32_t j = 0; j < m; j++)
        rtcReleaseScene(meshes[j]);
    rtcReleaseDevice(device);
    return 0;
}
