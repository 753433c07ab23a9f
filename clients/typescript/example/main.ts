/**
 * The example page: a scene of the service drawn by three.js from its GLB export, hovered and
 * picked through the live channel, its objects dragged with moves sent over the same channel;
 * every other page on the scene sees the moves as the channel's events.
 *
 * Open `index.html?service=<base URL>&scene=<scene id>&token=<token>` (the service must list
 * this page's origin in PICK_CORS_ORIGINS when it is served from elsewhere). Built by
 * `npm run build:example` (esbuild bundles three.js and the client from node_modules).
 */

import * as THREE from "three";
import { OrbitControls } from "three/examples/jsm/controls/OrbitControls.js";
import { GLTFLoader } from "three/examples/jsm/loaders/GLTFLoader.js";

import { LiveScene, PickClient, type ObjectOut } from "../src/index.js";

/** What the page did and saw, with times on the machine's clock (ms since the epoch), for tests and the console. */
interface ExampleState {
  ready: boolean;
  hover: number | null;
  lastPick: { object: number | null; point: number[] | null } | null;
  /** Moves this page sent: when, and the version the service gave them. */
  sent: { object: number; at: number; version: number | null; answeredAt: number | null }[];
  /** Events this page received: when, their version and the objects they moved. */
  seen: { at: number; version: number; event: string; objects: number[] }[];
  error: string | null;
  screenOf(id: number): { x: number; y: number } | null;
  transformOf(id: number): number[][] | null;
}

const now = () => performance.timeOrigin + performance.now();
const query = new URLSearchParams(location.search);
const baseUrl = query.get("service") ?? location.origin;
const token = query.get("token") ?? undefined;
const canvas = document.getElementById("view") as HTMLCanvasElement;
const panel = document.getElementById("panel") as HTMLDivElement;

const example: ExampleState = {
  ready: false, hover: null, lastPick: null, sent: [], seen: [], error: null,
  screenOf: () => null, transformOf: () => null,
};
(window as unknown as { example: ExampleState }).example = example;

/** Runs `action` on the newest value pushed, one at a time: the mouse moves faster than answers come. */
class Latest<T> {
  private pending: { value: T } | null = null;
  private busy = false;
  constructor(private readonly action: (value: T) => Promise<void>) {}

  push(value: T): void {
    this.pending = { value };
    void this.run();
  }

  private async run(): Promise<void> {
    if (this.busy) return;
    while (this.pending) {
      const { value } = this.pending;
      this.pending = null;
      this.busy = true;
      try {
        await this.action(value);
      } catch (error) {
        show(String(error), true);
      } finally {
        this.busy = false;
      }
    }
  }
}

function show(text: string, isError = false): void {
  panel.textContent = text;
  if (isError) example.error = text;
}

/** An object's 4×4 rows (the service's transform) as a three.js matrix. */
function matrixOf(rows: number[][]): THREE.Matrix4 {
  return new THREE.Matrix4().set(...(rows.flat() as Parameters<THREE.Matrix4["set"]>));
}

function rowsOf(matrix: THREE.Matrix4): number[][] {
  const e = matrix.elements; // column-major
  return [0, 1, 2, 3].map((row) => [e[row]!, e[row + 4]!, e[row + 8]!, e[row + 12]!]);
}

async function main(): Promise<void> {
  const http = new PickClient({ baseUrl, token });
  const sceneId = query.get("scene") ?? (await http.listScenes()).scenes[0]?.id;
  if (!sceneId) {
    show("the service holds no scene: upload one (POST /scenes/upload)", true);
    return;
  }

  // ---------------------------------------------------------------- three.js
  const renderer = new THREE.WebGLRenderer({ canvas, antialias: true });
  renderer.setPixelRatio(window.devicePixelRatio);
  const scene = new THREE.Scene();
  scene.background = new THREE.Color(0x1d2026);
  scene.add(new THREE.HemisphereLight(0xffffff, 0x334455, 2.0));
  const sun = new THREE.DirectionalLight(0xffffff, 1.5);
  sun.position.set(1, 2, 3);
  scene.add(sun);
  const camera = new THREE.PerspectiveCamera(45, 1, 0.01, 1000);
  const controls = new OrbitControls(camera, canvas);

  const gltf = await new GLTFLoader().parseAsync(await http.exportGlb(sceneId), "");
  scene.add(gltf.scene);
  /** The nodes by object id (the export puts each object's id in its node's extras.bvh_pick). */
  const nodes = new Map<number, THREE.Object3D>();
  gltf.scene.traverse((node) => {
    const id = (node.userData as { bvh_pick?: { id?: number } }).bvh_pick?.id;
    if (typeof id !== "number") return;
    nodes.set(id, node);
    if (node instanceof THREE.Mesh) {
      node.material = new THREE.MeshStandardMaterial({ color: 0x8fa3bf, roughness: 0.6 });
    }
  });

  // Frame the scene: from +z, up +y, far enough to see its bounding sphere.
  const sphere = new THREE.Box3().setFromObject(gltf.scene).getBoundingSphere(new THREE.Sphere());
  const radius = Math.max(sphere.radius, 1e-3);
  camera.position.copy(sphere.center).add(new THREE.Vector3(0, 0, 2.8 * radius));
  camera.near = radius / 100;
  camera.far = radius * 100;
  controls.target.copy(sphere.center);
  controls.update();

  let drawQueued = false;
  const draw = () => {
    if (drawQueued) return;
    drawQueued = true;
    requestAnimationFrame(() => {
      drawQueued = false;
      renderer.render(scene, camera);
    });
  };
  const resize = () => {
    renderer.setSize(canvas.clientWidth, canvas.clientHeight, false);
    camera.aspect = canvas.clientWidth / Math.max(canvas.clientHeight, 1);
    camera.updateProjectionMatrix();
    draw();
  };
  window.addEventListener("resize", resize);
  controls.addEventListener("change", draw);
  resize();

  const place = (object: ObjectOut) => {
    const node = nodes.get(object.id);
    if (!node) return;
    matrixOf(object.transform).decompose(node.position, node.quaternion, node.scale);
    node.updateMatrixWorld();
  };
  example.screenOf = (id) => {
    const node = nodes.get(id);
    if (!node) return null;
    const box = new THREE.Box3().setFromObject(node);
    const centre = box.getCenter(new THREE.Vector3()).project(camera);
    const rect = canvas.getBoundingClientRect();
    return { x: (centre.x + 1) / 2 * rect.width, y: (1 - centre.y) / 2 * rect.height };
  };
  example.transformOf = (id) => {
    const node = nodes.get(id);
    return node ? rowsOf(node.matrix.compose(node.position, node.quaternion, node.scale)) : null;
  };

  // ---------------------------------------------------------------- the live channel
  const live = new LiveScene({ baseUrl, sceneId, token, http });
  let dragging: { id: number; plane: THREE.Plane; start: THREE.Vector3; transform: THREE.Matrix4 } | null = null;
  /** Whether the button is down: a press's pick may be answered after its release. */
  let pressed = false;

  live.on("table", () => {
    // A hello (also after a reconnect) or a resync: every object as the service holds it.
    for (const object of live.objects.values()) if (object.id !== dragging?.id) place(object);
    draw();
  });
  live.on("event", (event) => {
    const ids = event.event === "removed" ? (event.objects as number[]) : (event.objects as ObjectOut[]).map((o) => o.id);
    example.seen.push({ at: now(), version: event.version, event: event.event, objects: ids });
    if (event.event === "removed") {
      for (const id of ids) nodes.get(id)?.removeFromParent();
    } else {
      // Objects added after the export have no node here: reload the page to draw them.
      for (const object of event.objects as ObjectOut[]) if (object.id !== dragging?.id) place(object);
    }
    draw();
  });
  live.on("close", ({ code, retryMs }) => show(retryMs === null ? `live channel closed (${code})`
                                                                  : `reconnecting in ${retryMs} ms…`));
  await live.ready;

  // ---------------------------------------------------------------- hover, pick, drag
  const raycaster = new THREE.Raycaster();
  const rayAt = (event: PointerEvent) => {
    const rect = canvas.getBoundingClientRect();
    const ndc = new THREE.Vector2((event.clientX - rect.left) / rect.width * 2 - 1,
                                  -((event.clientY - rect.top) / rect.height) * 2 + 1);
    raycaster.setFromCamera(ndc, camera);
    return raycaster.ray.clone();
  };
  const pickAt = async (ray: THREE.Ray) => {
    const result = await live.pick({ origin: ray.origin.toArray(), direction: ray.direction.toArray() });
    return "hit" in result && result.hit && result.object ? { id: result.object.id, point: result.point ?? null } : null;
  };
  const highlight = (id: number | null) => {
    if (id === example.hover) return;
    for (const [key, value] of [[example.hover, 0x000000], [id, 0x335577]] as const) {
      const node = key === null ? undefined : nodes.get(key);
      if (node instanceof THREE.Mesh) (node.material as THREE.MeshStandardMaterial).emissive.setHex(value);
    }
    example.hover = id;
    draw();
  };
  const hovers = new Latest<THREE.Ray>(async (ray) => {
    if (dragging) return;
    highlight((await pickAt(ray))?.id ?? null);
  });
  const moves = new Latest<{ id: number; rows: number[][] }>(async ({ id, rows }) => {
    const record: ExampleState["sent"][number] = { object: id, at: now(), version: null, answeredAt: null };
    example.sent.push(record);
    record.version = (await live.edit([{ id, transform: rows }])).version;
    record.answeredAt = now();
  });

  canvas.addEventListener("pointermove", (event) => {
    const ray = rayAt(event);
    if (!dragging) {
      hovers.push(ray);
      return;
    }
    const target = ray.intersectPlane(dragging.plane, new THREE.Vector3());
    if (!target) return;
    const delta = target.sub(dragging.start);
    const moved = dragging.transform.clone().premultiply(new THREE.Matrix4().makeTranslation(delta.x, delta.y, delta.z));
    const node = nodes.get(dragging.id);
    if (node) {
      moved.decompose(node.position, node.quaternion, node.scale);
      node.updateMatrixWorld();
    }
    moves.push({ id: dragging.id, rows: rowsOf(moved) });
    draw();
  });
  canvas.addEventListener("pointerdown", async (event) => {
    if (event.button !== 0) return;
    pressed = true;
    const ray = rayAt(event);
    // Orbiting waits for the pick: a press on an object drags it, elsewhere it orbits.
    controls.enabled = false;
    const hit = await pickAt(ray);
    example.lastPick = { object: hit?.id ?? null, point: hit?.point ?? null };
    const object = hit ? live.objects.get(hit.id) : undefined;
    if (!pressed || !hit || !object || !hit.point) {
      controls.enabled = true;
      show(hit ? `picked object ${hit.id}` : "nothing there");
      return;
    }
    const start = new THREE.Vector3().fromArray(hit.point);
    const facing = camera.getWorldDirection(new THREE.Vector3());
    dragging = { id: hit.id, plane: new THREE.Plane().setFromNormalAndCoplanarPoint(facing, start), start,
                 transform: matrixOf(object.transform) };
    canvas.setPointerCapture(event.pointerId);
    highlight(hit.id);
    show(`dragging object ${hit.id} (${object.name ?? "unnamed"})`);
  });
  canvas.addEventListener("pointerup", () => {
    pressed = false;
    dragging = null;
    controls.enabled = true;
  });

  example.ready = true;
  show(`scene ${sceneId}: ${nodes.size} objects, version ${live.version}; hover to pick, drag to move`);
  draw();
}

main().catch((error: unknown) => show(`failed: ${String(error)}`, true));
