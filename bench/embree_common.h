/* What bench/embree_instances.c and bench/embree_closest.c share: reading
 * their input file, Embree 3's robust scene of one triangle mesh, a clock,
 * and the order of timings for their medians. */

#ifndef BENCH_EMBREE_COMMON_H
#define BENCH_EMBREE_COMMON_H

#include <embree3/rtcore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static FILE *open_input(const char *path)
{
    FILE *file = fopen(path, "rb");
    if (!file) {
        perror(path);
        exit(2);
    }
    return file;
}

static void *read_exactly(FILE *file, size_t bytes)
{
    void *data = malloc(bytes ? bytes : 1);
    if (!data || fread(data, 1, bytes, file) != bytes) {
        fprintf(stderr, "input file too short\n");
        exit(2);
    }
    return data;
}

/* A committed robust scene of triangles `faces` (f rows of 3) over
 * `vertices` (v rows of 3). */
static RTCScene robust_mesh_scene(RTCDevice device, uint32_t v, uint32_t f, const float *vertices,
                                  const uint32_t *faces)
{
    RTCScene scene = rtcNewScene(device);
    rtcSetSceneFlags(scene, RTC_SCENE_FLAG_ROBUST);
    RTCGeometry mesh = rtcNewGeometry(device, RTC_GEOMETRY_TYPE_TRIANGLE);
    float *vb = rtcSetNewGeometryBuffer(mesh, RTC_BUFFER_TYPE_VERTEX, 0, RTC_FORMAT_FLOAT3, 3 * sizeof(float), v);
    uint32_t *ib = rtcSetNewGeometryBuffer(mesh, RTC_BUFFER_TYPE_INDEX, 0, RTC_FORMAT_UINT3, 3 * sizeof(uint32_t), f);
    for (size_t i = 0; i < 3 * (size_t)v; i++)
        vb[i] = vertices[i];
    for (size_t i = 0; i < 3 * (size_t)f; i++)
        ib[i] = faces[i];
    rtcCommitGeometry(mesh);
    rtcAttachGeometry(scene, mesh);
    rtcReleaseGeometry(mesh);
    rtcCommitScene(scene);
    return scene;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
