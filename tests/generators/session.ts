/**
 * The README's curl session (and the binary forms of docs/http-api.md's) through the client
 * openapi-typescript generated (schema.ts, default settings) and openapi-fetch, unmodified.
 *
 * tests/test_generated_clients.py copies this file beside the freshly generated schema.ts,
 * compiles both with `tsc --strict` and runs the result with node:
 *     node session.js <base URL> <path of sample_meshes/torus.ply>
 * It prints one line per step and exits non-zero at the first answer that is not the README's.
 */
import { readFileSync } from "node:fs";
import createClient from "openapi-fetch";
import type { paths } from "./schema.js";

const [baseUrl, torusPath] = process.argv.slice(2);
const client = createClient<paths>({ baseUrl });

function check(condition: boolean, what: string): void {
  if (!condition) {
    throw new Error(`not as the README says: ${what}`);
  }
  console.log(`ok ${what}`);
}

function near(value: number | null | undefined, expected: number, tolerance = 1e-9): boolean {
  return value != null && Math.abs(value - expected) <= tolerance * Math.max(1, Math.abs(expected));
}

// A `format: binary` body is typed string by openapi-typescript; openapi-fetch hands the body to
// bodySerializer, and fetch sends a typed array's bytes. These three say so once.
const octetStream = { "Content-Type": "application/octet-stream" } as const;
const bytes = (array: ArrayBufferView): string => array as unknown as string;
const asIs = (body: unknown): unknown => body;

async function main(): Promise<void> {
  // $ curl -s -F file=@sample_meshes/torus.ply -F name=torus localhost:8000/scenes/upload
  const upload = await client.POST("/scenes/upload", {
    body: { file: torusPath, name: "torus" },
    bodySerializer: (body) => {
      const form = new FormData();
      form.append("file", new Blob([readFileSync(body.file)]), "torus.ply");
      if (body.name !== undefined) form.append("name", body.name);
      return form;
    },
  });
  check(upload.response.status === 201 && upload.data?.name === "torus" && upload.data.triangles === 2304,
        "upload: a scene of 2304 triangles");
  const scene_id = upload.data!.id;
  const path = { scene_id };

  const pick = await client.POST("/scenes/{scene_id}/pick", {
    params: { path }, body: { origin: [0, 0, 5], direction: [0.2, 0, -1] },
  });
  check(pick.data !== undefined && "hit" in pick.data && pick.data.hit && near(pick.data.t, 4.658979256406773)
        && pick.data.triangle === 12, "pick: t 4.658979256406773 on triangle 12");

  const batch = await client.POST("/scenes/{scene_id}/pick/batch", {
    params: { path }, body: { origins: [[0, 0, 5], [5, 5, 5]], directions: [[0.2, 0, -1], [0, 0, -1]] },
  });
  check(batch.data !== undefined && batch.data.hit[0] === true && batch.data.hit[1] === false
        && near(batch.data.t[0], 4.658979256406773) && batch.data.triangle[0] === 12, "batch (JSON)");

  const rays = new Float32Array([0, 0, 5, 0.2, 0, -1, 5, 5, 5, 0, 0, -1]);
  const packed = await client.POST("/scenes/{scene_id}/pick/batch.bin", {
    params: { path, query: { cull_backfaces: false } }, body: bytes(rays), bodySerializer: asIs,
    headers: octetStream, parseAs: "arrayBuffer",
  });
  const records = new DataView(packed.data!);
  check(packed.data!.byteLength === 64 && near(records.getFloat32(0, true), 4.658979256406773, 1e-5)
        && records.getInt32(8, true) === 12 && records.getFloat32(32, true) === Infinity
        && records.getInt32(36, true) === -1, "batch (binary): 2 records of 32 bytes");

  const selected = await client.POST("/scenes/{scene_id}/select", {
    params: { path }, body: { position: [0, -4, 3], target: [0, 0, 0], up: [0, 0, 1], fov_y_deg: 50, width: 640,
                              height: 480, rect: [200, 150, 440, 330] },
  });
  check(selected.data?.objects.length === 1 && selected.data.objects[0].id === 0, "select: the torus");

  const closest = await client.POST("/scenes/{scene_id}/closest", {
    params: { path }, body: { points: [[0.7, 0.4, 1.5], [5, 0, 0]], max_distance: 3 },
  });
  check(closest.data !== undefined && closest.data.found[0] === true && closest.data.found[1] === false
        && near(closest.data.distance[0], 1.1653818953544948) && closest.data.triangle[0] === 157, "closest (JSON)");

  const closestPacked = await client.POST("/scenes/{scene_id}/closest.bin", {
    params: { path, query: { max_distance: 3 } }, body: bytes(new Float32Array([0.7, 0.4, 1.5, 5, 0, 0])),
    bodySerializer: asIs, headers: octetStream, parseAs: "arrayBuffer",
  });
  const nearest = new DataView(closestPacked.data!);
  check(closestPacked.data!.byteLength === 88 && near(nearest.getFloat32(0, true), 1.1653818953544948, 1e-5)
        && nearest.getInt32(8, true) === 157 && nearest.getInt32(48, true) === -1, "closest (binary)");

  const moved = await client.PATCH("/scenes/{scene_id}/objects/{object_id}", {
    params: { path: { scene_id, object_id: 0 } }, body: { transform: [[1, 0, 0, 2], [0, 1, 0, 0], [0, 0, 1, 0],
                                                                       [0, 0, 0, 1]] },
  });
  check(moved.data !== undefined && near(moved.data.bounds?.[0][0], 0.6499999761581421), "move the torus by 2 in x");

  const zero = await client.POST("/scenes/{scene_id}/pick", {
    params: { path }, body: { origin: [0, 0, 5], direction: [0, 0, 0] },
  });
  check(zero.response.status === 422 && zero.error?.detail === "direction must not be the zero vector",
        "a zero direction: 422 saying so");

  // docs/http-api.md goes on: a copy, batch edits (JSON and binary), vertices out and in, the export.
  const copy = await client.POST("/scenes/{scene_id}/objects", { params: { path }, body: { mesh: 0, name: "copy" } });
  check(copy.response.status === 201 && copy.data?.objects[0].id === 1, "add an instance");

  const renamed = await client.PATCH("/scenes/{scene_id}/objects", {
    params: { path }, body: [{ id: 1, name: "x" }, { id: 0, mask: 1 }],
  });
  check(renamed.data?.count === 2 && renamed.data.objects?.[0].name === "x", "batch edit (JSON list)");

  const move = new DataView(new ArrayBuffer(52));
  move.setInt32(0, 1, true);
  [1, 0, 0, 0, 0, 1, 0, 3, 0, 0, 1, 0].forEach((value, index) => move.setFloat32(4 + 4 * index, value, true));
  const movedPacked = await client.PATCH("/scenes/{scene_id}/objects.bin", {
    params: { path }, body: bytes(move), bodySerializer: asIs, headers: octetStream,
  });
  check(movedPacked.data?.count === 1 && movedPacked.data.objects === null, "batch moves (binary)");

  const vertices = await client.GET("/scenes/{scene_id}/meshes/{mesh_id}/vertices.bin", {
    params: { path: { scene_id, mesh_id: 0 } }, parseAs: "arrayBuffer",
  });
  check(vertices.data?.byteLength === 1152 * 12, "vertices (binary): 1152 float32 triples");
  const json = await client.GET("/scenes/{scene_id}/meshes/{mesh_id}/vertices", {
    params: { path: { scene_id, mesh_id: 0 } },
  });
  const first = new Float32Array(vertices.data!, 0, 3);
  check(json.data?.vertices.length === 1152 && json.data.vertices[0].every((value, axis) => value === first[axis]),
        "vertices (JSON) as the binary ones");

  const scaled = new Float32Array(vertices.data!).map((value) => value * 1.5);
  const replaced = await client.PUT("/scenes/{scene_id}/meshes/{mesh_id}/vertices.bin", {
    params: { path: { scene_id, mesh_id: 0 } }, body: bytes(scaled), bodySerializer: asIs, headers: octetStream,
  });
  check(replaced.response.status === 200 && replaced.data !== undefined, "vertices scaled by 1.5 (binary)");

  const faces = await client.GET("/scenes/{scene_id}/meshes/{mesh_id}/faces.bin", {
    params: { path: { scene_id, mesh_id: 0 } }, parseAs: "arrayBuffer",
  });
  check(faces.data?.byteLength === 2304 * 12, "faces (binary): 2304 int32 triples");

  const cast = await client.POST("/scenes/{scene_id}/sphere-cast.bin", {
    params: { path, query: { radius: 0.1 } }, body: bytes(rays), bodySerializer: asIs, headers: octetStream,
    parseAs: "arrayBuffer",
  });
  check(cast.data?.byteLength === 88, "sphere cast (binary): 2 records of 44 bytes");

  const inside = await client.POST("/scenes/{scene_id}/contains.bin", {
    params: { path }, body: bytes(new Float32Array([1, 0, 0, 0, 0, 0])), bodySerializer: asIs,
    headers: octetStream, parseAs: "arrayBuffer",
  });
  check(inside.data?.byteLength === 16, "contains (binary): 2 records of 8 bytes");

  const image = await client.GET("/scenes/{scene_id}/render", {
    params: { path, query: { width: 64, height: 48 } }, parseAs: "arrayBuffer",
  });
  check(new TextDecoder().decode(new Uint8Array(image.data!, 1, 3)) === "PNG", "render: a PNG");

  const glb = await client.GET("/scenes/{scene_id}/export.glb", { params: { path }, parseAs: "arrayBuffer" });
  check(new TextDecoder().decode(new Uint8Array(glb.data!, 0, 4)) === "glTF", "export: a GLB");
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
