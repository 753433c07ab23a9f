/** The HTTP client against the live service: typed JSON calls, the `.bin` operations, the export, idempotency keys. */

import assert from "node:assert/strict";
import { before, describe, test } from "node:test";

import { ApiError, PickClient, type Schemas } from "../src/node.js";
import { BASE_URL, client, CUBE, SQUARE, squares, TOKEN, translation } from "./support.js";

describe("HTTP", () => {
  let scene: Schemas["SceneOut"];

  before(async () => {
    scene = await squares("http squares");
  });

  test("a pick as the README writes it, {origin, direction}, hits what was built there", async () => {
    const hit = await client.pick(scene.id, { origin: [4.75, 0.25, 5], direction: [0, 0, -1] });
    assert.ok("hit" in hit && hit.hit);
    assert.equal(hit.object?.id, 2);
    assert.equal(hit.triangle, 0);
    assert.equal(hit.t, 5);
    assert.deepEqual(hit.point, [4.75, 0.25, 0]);
  });

  test("a file uploads as a new scene (POST /scenes/upload, multipart)", async () => {
    const obj = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3\nf 1 3 4\n";
    const uploaded = await client.uploadScene(new Blob([obj]), "square.obj", "uploaded square");
    assert.equal(uploaded.name, "uploaded square");
    assert.equal(uploaded.object_count, 1);
    assert.equal(uploaded.triangles, 2);
    const hit = await client.pick(uploaded.id, { origin: [0.75, 0.25, 1], direction: [0, 0, -1] });
    assert.ok("hit" in hit && hit.hit && hit.t === 1);
  });

  test("pages of objects list every object once, in id order", async () => {
    const ids: number[] = [];
    for await (const object of client.objects(scene.id, 5)) ids.push(object.id);
    assert.deepEqual(ids, Array.from({ length: 12 }, (_, i) => i));
  });

  test("a binary batch (Float32Array rays, pick/batch.bin) answers what one pick per ray answers", async () => {
    const rays = new Float32Array(13 * 6);
    for (let i = 0; i < 12; i++) rays.set([2 * i + 0.75, 0.25, 5, 0, 0, -1], 6 * i);
    rays.set([-5, 0.25, 5, 0, 0, -1], 6 * 12);
    const records = await client.pickBatch(scene.id, rays);
    assert.equal(records.count, 13);
    for (let i = 0; i < 13; i++) {
      const origin = Array.from(rays.subarray(6 * i, 6 * i + 3));
      const one = await client.pick(scene.id, { origin, direction: [0, 0, -1] });
      assert.ok("hit" in one);
      assert.equal(records.object[i], one.hit ? one.object!.id : -1);
      assert.equal(records.triangle[i], one.hit ? one.triangle : -1);
      if (one.hit) {
        assert.equal(records.t[i], Math.fround(one.t!));
        assert.deepEqual(Array.from(records.normal.subarray(3 * i, 3 * i + 3)), one.normal!.map(Math.fround));
      }
    }
    const primitives = await client.pickBatchPrimitives(scene.id, rays, { tmax: 4 });
    assert.deepEqual(Array.from(primitives.object), new Array(13).fill(-1), "tmax 4 stops short of z = 0");
    assert.deepEqual(Array.from(primitives.primitive), new Array(13).fill(-1));
  });

  test("closest.bin, sphere-cast.bin and contains.bin answer the points and rays as built", async () => {
    const withCube = await client.createScene({ name: "cube", meshes: [CUBE, { ...SQUARE, transform: translation(5, 0, 0) }] });
    const points = new Float32Array([0.5, 0.5, 0.5, 5.25, 0.75, 2, 0.5, 3, 0.5]);
    const nearest = await client.closest(withCube.id, points);
    assert.deepEqual(Array.from(nearest.object), [0, 1, 0]);
    assert.deepEqual(Array.from(nearest.distance), [0.5, 2, 2]);
    assert.deepEqual(Array.from(nearest.point.subarray(3, 6)), [5.25, 0.75, 0]);
    const bounded = await client.closest(withCube.id, points, { max_distance: 1 });
    assert.deepEqual(Array.from(bounded.object), [0, -1, -1]);

    const rays = new Float32Array([5.75, 0.25, 5, 0, 0, -1, 0.5, 0.5, 5, 0, 0, -1]);
    const cast = await client.sphereCast(withCube.id, rays, { radius: 0.5 });
    assert.deepEqual(Array.from(cast.object), [1, 0]);
    assert.deepEqual(Array.from(cast.t), [4.5, 3.5]);
    assert.deepEqual(Array.from(cast.point), [5.75, 0.25, 0, 0.5, 0.5, 1]);

    const inside = await client.contains(withCube.id, new Float32Array([0.5, 0.5, 0.5, 3, 3, 3]), { signed_distance: true });
    assert.deepEqual(Array.from(inside.object), [0, -1]);
    assert.equal(inside.signedDistance[0], -0.5);
    const plain = await client.contains(withCube.id, new Float32Array([0.5, 0.5, 0.5]));
    assert.ok(Number.isNaN(plain.signedDistance[0]), "no signed distance unless asked");
  });

  test("objects.bin moves objects by id and matrix rows; the objects say so", async () => {
    const moved = await squares("moved squares", 3);
    const rows = new Float32Array([1, 0, 0, 10, 0, 1, 0, 20, 0, 0, 1, 30, 2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2, 0]);
    const result = await client.moveObjects(moved.id, [1, 2], rows);
    assert.equal(result.count, 2);
    assert.deepEqual((await client.getObject(moved.id, 1)).transform, translation(10, 20, 30));
    assert.deepEqual((await client.getObject(moved.id, 2)).transform, [[2, 0, 0, 0], [0, 2, 0, 0], [0, 0, 2, 0], [0, 0, 0, 1]]);
    const hit = await client.pick(moved.id, { origin: [10.75, 20.25, 40], direction: [0, 0, -1] });
    assert.ok("hit" in hit && hit.hit && hit.object?.id === 1);
  });

  test("vertices.bin and faces.bin give the mesh back; a PUT of vertices.bin replaces it", async () => {
    const own = await client.createScene({ name: "mesh", meshes: [SQUARE] });
    assert.deepEqual(Array.from(await client.vertices(own.id, 0)), SQUARE.vertices.flat());
    assert.deepEqual(Array.from(await client.faces(own.id, 0)), SQUARE.faces.flat());
    const doubled = new Float32Array(SQUARE.vertices.flat().map((value) => 2 * value));
    await client.replaceVertices(own.id, 0, doubled);
    assert.deepEqual(await client.vertices(own.id, 0), doubled);
    const hit = await client.pick(own.id, { origin: [1.5, 0.25, 1], direction: [0, 0, -1] });
    assert.ok("hit" in hit && hit.hit, "the doubled square reaches x = 1.5");
  });

  test("export.glb holds one node per object, its id in extras.bvh_pick", async () => {
    const data = await client.exportGlb(scene.id);
    const view = new DataView(data);
    assert.equal(view.getUint32(0, true), 0x46546c67, "the GLB magic, glTF");
    assert.equal(view.getUint32(4, true), 2);
    assert.equal(view.getUint32(8, true), data.byteLength);
    const jsonBytes = view.getUint32(12, true);
    assert.equal(view.getUint32(16, true), 0x4e4f534a, "the first chunk is JSON");
    const document = JSON.parse(new TextDecoder().decode(new Uint8Array(data, 20, jsonBytes))) as {
      nodes: { name?: string; extras: { bvh_pick: { id: number } } }[]; meshes: unknown[];
    };
    assert.equal(document.meshes.length, 1, "the square once, placed by every object");
    assert.deepEqual(document.nodes.map((node) => node.extras.bvh_pick.id), Array.from({ length: 12 }, (_, i) => i));
    assert.equal(document.nodes[3]?.name, "square 3");
  });

  test("a refusal is an ApiError in the service's words", async () => {
    await assert.rejects(client.getScene("no-such-scene"), (error: unknown) =>
      error instanceof ApiError && error.status === 404 && /no-such-scene/.test(error.detail));
    const stranger = new PickClient({ baseUrl: BASE_URL, token: "not the key" });
    await assert.rejects(stranger.listScenes(), (error: unknown) => error instanceof ApiError && error.status === 401);
    await assert.rejects(client.pickBatch(scene.id, new Float32Array(6), { tmin: -1 }),
      (error: unknown) => error instanceof ApiError && error.status === 422);
  });
});

describe("Idempotency-Key", () => {
  /** A fetch that records each request's method and key, and loses the answer of the first write it forwards. */
  function losingFetch(seen: { method: string; key: string | null }[]) {
    let lost = false;
    return async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
      const headers = new Headers(init?.headers);
      const method = init?.method ?? "GET";
      seen.push({ method, key: headers.get("Idempotency-Key") });
      const response = await fetch(input, init);
      if (method !== "GET" && !lost) {
        lost = true;
        await response.arrayBuffer();
        throw new TypeError("fetch failed (the answer was lost on its way back)");
      }
      return response;
    };
  }

  test("every write carries one; a write whose answer was lost is sent again with the same key and applied once", async () => {
    const seen: { method: string; key: string | null }[] = [];
    const retrying = new PickClient({ baseUrl: BASE_URL, token: TOKEN, fetch: losingFetch(seen), retryDelayMs: 1 });
    const name = `idempotent ${Date.now()}`;
    const scene = await retrying.createScene({ name, meshes: [SQUARE] });
    const writes = seen.filter((request) => request.method === "POST");
    assert.equal(writes.length, 2, "sent, lost, sent again");
    assert.match(writes[0]!.key!, /^[0-9a-f]{32}$/);
    assert.equal(writes[1]!.key, writes[0]!.key);
    const named = (await client.listScenes()).scenes.filter((summary) => summary.name === name);
    assert.deepEqual(named.map((summary) => summary.id), [scene.id], "one scene, not two");
    await retrying.getScene(scene.id);
    assert.equal(seen.at(-1)!.key, null, "reads carry none");
  });

  test("the same key sent again answers the first answer, marked Idempotent-Replayed", async () => {
    const scene = await squares("replayed", 1);
    const send = () => client.api.POST("/scenes/{scene_id}/objects", {
      params: { path: { scene_id: scene.id } },
      headers: { "Idempotency-Key": `replay-${scene.id}` },
      body: { mesh: 0, transform: translation(3, 0, 0) },
    });
    const first = await send();
    const again = await send();
    assert.equal(first.response.status, 201);
    assert.equal(again.response.status, 201);
    assert.deepEqual(again.data, first.data);
    assert.equal(again.response.headers.get("Idempotent-Replayed"), "true");
    assert.equal((await client.getScene(scene.id)).object_count, 2);
  });
});
