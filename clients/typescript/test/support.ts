/**
 * What the suites share: the live service they run against (`PICK_URL`, `PICK_TOKEN`, started by
 * tests/test_ts_client.py with PICK_INLINE_OBJECTS=5 and PICK_LIVE_QUEUE=8) and the scenes they make.
 */

import { PickClient, type Schemas } from "../src/node.js";

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run these tests through tests/test_ts_client.py (it starts the service)`);
  return value;
}

export const BASE_URL = required("PICK_URL");
export const TOKEN = required("PICK_TOKEN");
/** The service's PICK_INLINE_OBJECTS: a hello lists this many objects, the rest are paged. */
export const INLINE_OBJECTS = 5;

export const client = new PickClient({ baseUrl: BASE_URL, token: TOKEN });

/** A 4×4 translation, as rows. */
export function translation(x: number, y: number, z: number): number[][] {
  return [[1, 0, 0, x], [0, 1, 0, y], [0, 0, 1, z], [0, 0, 0, 1]];
}

/** The unit square in z = 0, two triangles: (0,1,2) below the diagonal y = x, (0,2,3) above. */
export const SQUARE = {
  vertices: [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]],
  faces: [[0, 1, 2], [0, 2, 3]],
};

/** The unit cube [0, 1]^3, closed, outward faces. */
export const CUBE = {
  vertices: [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]],
  faces: [[0, 2, 1], [0, 3, 2], [4, 5, 6], [4, 6, 7], [0, 1, 5], [0, 5, 4], [2, 3, 7], [2, 7, 6],
          [1, 2, 6], [1, 6, 5], [0, 4, 7], [0, 7, 3]],
};

/** Squares placed at x = 2i (object i, i < count) on one mesh, so that more objects than a hello lists. */
export async function squares(name: string, count = 12): Promise<Schemas["SceneOut"]> {
  const scene = await client.createScene({ name, meshes: [{ ...SQUARE, name: "square 0" }] });
  for (let i = 1; i < count; i++) {
    await client.addObjects(scene.id, { mesh: 0, name: `square ${i}`, transform: translation(2 * i, 0, 0) });
  }
  return client.getScene(scene.id);
}

/** Every object of a scene, by id, read over HTTP. */
export async function objectsById(sceneId: string): Promise<Map<number, Schemas["ObjectOut"]>> {
  const found = new Map<number, Schemas["ObjectOut"]>();
  for await (const object of client.objects(sceneId)) found.set(object.id, object);
  return found;
}
