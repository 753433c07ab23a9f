/**
 * HTTP calls of the service: every JSON operation typed from the OpenAPI document
 * (openapi-typescript, through openapi-fetch), and the binary `.bin` operations with
 * `Float32Array` rays and points in and typed records out.
 *
 * Every write (POST, PATCH, PUT, DELETE) carries an `Idempotency-Key`, one per call, kept
 * across its retries: a call retried after a dropped connection or a 503 is applied once.
 */

import createOpenApiClient, { type Client } from "openapi-fetch";

import {
  littleEndian, packMoves, POINT_BYTES, RAY_BYTES, readClosestRecords, readContainsRecords, readPickRecords,
  readPrimitivePickRecords, readSphereCastRecords, rowsOf, type ClosestRecords, type ContainsRecords,
  type PickRecords, type PrimitivePickRecords, type SphereCastRecords,
} from "./binary.js";
import type { components, paths } from "./generated/api.js";

export type Schemas = components["schemas"];
export type { paths, components };

/** A refusal of the service (4xx, 5xx), with its status and the `detail` it gave. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly detail: string, readonly body?: unknown) {
    super(`${status}: ${detail}`);
    this.name = "ApiError";
  }
}

export interface ClientOptions {
  /** The service's base URL, e.g. `http://127.0.0.1:8000`. */
  baseUrl: string;
  /** An API key or a signed token, sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** The fetch to use (default: the global one). */
  fetch?: typeof globalThis.fetch;
  /** Attempts after the first on a 503 or a failed connection (default 3). */
  retries?: number;
  /** The first wait before a retry, doubled each time (default 100 ms). */
  retryDelayMs?: number;
}

/** Methods that change something: each call gets an `Idempotency-Key`. */
const WRITES = new Set(["POST", "PATCH", "PUT", "DELETE"]);

/** A fresh idempotency key: 128 random bits as hex (crypto.getRandomValues works outside secure contexts too). */
export function newKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** A path of the OpenAPI document (checked by the compiler) with its `{parameters}` filled in. */
export function pathOf(template: keyof paths, values: Record<string, string | number>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(values[name])));
}

/** Query options of a `.bin` operation: arrays repeat the parameter (`objects=1&objects=2`), undefined ones are left out. */
export type BinaryQuery = Record<string, number | boolean | string | readonly number[] | null | undefined>;

function queryString(options: BinaryQuery): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(options)) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) for (const item of value) query.append(name, String(item));
    else query.append(name, String(value));
  }
  const text = query.toString();
  return text ? `?${text}` : "";
}

export interface BatchOptions extends BinaryQuery {
  tmin?: number;
  tmax?: number;
  cull_backfaces?: boolean;
  mask?: number;
  objects?: readonly number[];
  exclude?: readonly number[];
  alpha_test?: boolean;
  alpha_cutoff?: number;
  line_tolerance?: number;
  point_tolerance?: number;
}

export interface FilterOptions extends BinaryQuery {
  mask?: number;
  objects?: readonly number[];
  exclude?: readonly number[];
}

/** What `POST /scenes/{id}/objects` takes as JSON: an inline mesh, an instance or a shape. */
export type NewObject = Schemas["MeshObjectCreate"] | Schemas["InstanceCreate"] | Schemas["ShapeCreate"];

/** The typed openapi-fetch client of the service's JSON operations. */
export type ApiClient = Client<paths>;

/**
 * The service over HTTP.
 *
 * `api` is the openapi-fetch client of every operation, typed from the OpenAPI document
 * (`client.api.GET("/scenes/{scene_id}", {params: {path: {scene_id}}})`); the methods below
 * cover the usual calls and throw {@link ApiError} on a refusal.
 */
export class PickClient {
  readonly baseUrl: string;
  readonly api: ApiClient;
  private readonly token: string | undefined;
  private readonly fetchImpl: typeof globalThis.fetch;
  private readonly retries: number;
  private readonly retryDelayMs: number;

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.token = options.token;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.retries = options.retries ?? 3;
    this.retryDelayMs = options.retryDelayMs ?? 100;
    this.api = createOpenApiClient<paths>({ baseUrl: this.baseUrl, fetch: (request) => this.send(request) });
  }

  /**
   * Send `request` with the token and, for a write, an `Idempotency-Key` (unless it has one);
   * retried with the same key on a 503 or a failed connection.
   */
  async send(request: Request): Promise<Response> {
    const headers = new Headers(request.headers);
    if (this.token !== undefined && !headers.has("Authorization")) headers.set("Authorization", `Bearer ${this.token}`);
    if (WRITES.has(request.method) && !headers.has("Idempotency-Key")) headers.set("Idempotency-Key", newKey());
    const body = request.body === null ? null : await request.arrayBuffer();
    let delay = this.retryDelayMs;
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= this.retries;
      let response: Response;
      try {
        response = await this.fetchImpl(request.url, { method: request.method, headers, body, signal: request.signal });
      } catch (error) {
        if (last || request.signal.aborted) throw error;
        await sleep(delay);
        delay *= 2;
        continue;
      }
      if (response.status !== 503 || last) return response;
      await response.body?.cancel();
      const after = Number(response.headers.get("Retry-After"));
      await sleep(Number.isFinite(after) && after > 0 ? Math.min(1000 * after, 10_000) : delay);
      delay *= 2;
    }
  }

  /** A raw call of a path (the binary operations), through {@link send}; the answer's body, or an {@link ApiError}. */
  async raw(method: string, path: string, init: { body?: BodyInit; contentType?: string; accept?: string } = {}):
      Promise<Response> {
    const headers = new Headers();
    if (init.contentType) headers.set("Content-Type", init.contentType);
    if (init.accept) headers.set("Accept", init.accept);
    const response = await this.send(new Request(`${this.baseUrl}${path}`, { method, headers, body: init.body ?? null }));
    if (!response.ok) throw await errorOf(response);
    return response;
  }

  // ------------------------------------------------------------ scenes
  async listScenes(): Promise<Schemas["SceneList"]> {
    return unwrap(await this.api.GET("/scenes"));
  }

  async getScene(sceneId: string): Promise<Schemas["SceneOut"]> {
    return unwrap(await this.api.GET("/scenes/{scene_id}", { params: { path: { scene_id: sceneId } } }));
  }

  /** A new scene from inline meshes (JSON). */
  async createScene(body: Schemas["SceneCreate"]): Promise<Schemas["SceneOut"]> {
    return unwrap(await this.api.POST("/scenes", { body }));
  }

  /** A new scene from a mesh or scene file (`POST /scenes/upload`, multipart). */
  async uploadScene(file: Blob, filename: string, name?: string): Promise<Schemas["SceneOut"]> {
    const form = new FormData();
    form.append("file", file, filename);
    if (name !== undefined) form.append("name", name);
    return (await this.raw("POST", pathOf("/scenes/upload", {}), { body: form })).json() as Promise<Schemas["SceneOut"]>;
  }

  async deleteScene(sceneId: string): Promise<void> {
    unwrapEmpty(await this.api.DELETE("/scenes/{scene_id}", { params: { path: { scene_id: sceneId } } }));
  }

  /** The whole scene as a GLB (binary glTF): meshes once, objects as nodes whose `extras.bvh_pick.id` is the object's id. */
  async exportGlb(sceneId: string): Promise<ArrayBuffer> {
    return (await this.raw("GET", pathOf("/scenes/{scene_id}/export.glb", { scene_id: sceneId }))).arrayBuffer();
  }

  // ------------------------------------------------------------ objects
  /** One page of the scene's objects in id order, after the id `after`. */
  async listObjects(sceneId: string, after?: number | null, limit?: number): Promise<Schemas["ObjectPage"]> {
    const query: { after?: number; limit?: number } = {};
    if (after !== undefined && after !== null) query.after = after;
    if (limit !== undefined) query.limit = limit;
    return unwrap(await this.api.GET("/scenes/{scene_id}/objects", { params: { path: { scene_id: sceneId }, query } }));
  }

  /** Every object of the scene, page by page. */
  async *objects(sceneId: string, limit?: number): AsyncGenerator<Schemas["ObjectOut"]> {
    let after: number | null | undefined;
    do {
      const page = await this.listObjects(sceneId, after, limit);
      yield* page.objects;
      after = page.next_after;
    } while (after !== null);
  }

  /** Add an inline mesh, an instance of a mesh, or a shape (JSON). */
  async addObjects(sceneId: string, body: NewObject): Promise<Schemas["ObjectList"]> {
    return unwrap(await this.api.POST("/scenes/{scene_id}/objects", { params: { path: { scene_id: sceneId } }, body }));
  }

  /** Change many objects at once, all or nothing (JSON). */
  async updateObjects(sceneId: string, entries: Schemas["ObjectBatchUpdate"][]): Promise<Schemas["ObjectBatchResult"]> {
    return unwrap(await this.api.PATCH("/scenes/{scene_id}/objects", {
      params: { path: { scene_id: sceneId } },
      body: entries,
    }));
  }

  /**
   * Move many objects at once, binary (`PATCH /scenes/{id}/objects.bin`): for animation-rate updates.
   *
   * @param ids N object ids
   * @param rows N×12 float32: each object's first three matrix rows (object to world)
   */
  async moveObjects(sceneId: string, ids: ArrayLike<number>, rows: Float32Array): Promise<Schemas["ObjectBatchResult"]> {
    const response = await this.raw("PATCH", pathOf("/scenes/{scene_id}/objects.bin", { scene_id: sceneId }), {
      body: packMoves(ids, rows), contentType: "application/octet-stream",
    });
    return response.json() as Promise<Schemas["ObjectBatchResult"]>;
  }

  async getObject(sceneId: string, objectId: number): Promise<Schemas["ObjectOut"]> {
    return unwrap(await this.api.GET("/scenes/{scene_id}/objects/{object_id}", {
      params: { path: { scene_id: sceneId, object_id: objectId } },
    }));
  }

  async deleteObject(sceneId: string, objectId: number): Promise<void> {
    unwrapEmpty(await this.api.DELETE("/scenes/{scene_id}/objects/{object_id}", {
      params: { path: { scene_id: sceneId, object_id: objectId } },
    }));
  }

  // ------------------------------------------------------------ meshes
  /** A mesh's vertices in its own coordinates, V×3 float32 (`GET .../vertices.bin`). */
  async vertices(sceneId: string, meshId: number): Promise<Float32Array> {
    const data = await (await this.raw("GET", pathOf("/scenes/{scene_id}/meshes/{mesh_id}/vertices.bin", { scene_id: sceneId, mesh_id: meshId }))).arrayBuffer();
    return new Float32Array(littleEndianCopy(data, "f32"));
  }

  /** A mesh's faces, F×3 int32 vertex indices (`GET .../faces.bin`). */
  async faces(sceneId: string, meshId: number): Promise<Int32Array> {
    const data = await (await this.raw("GET", pathOf("/scenes/{scene_id}/meshes/{mesh_id}/faces.bin", { scene_id: sceneId, mesh_id: meshId }))).arrayBuffer();
    return new Int32Array(littleEndianCopy(data, "i32"));
  }

  /** Replace every vertex of a mesh (V×3 float32, its own coordinates): its instances move with it. */
  async replaceVertices(sceneId: string, meshId: number, vertices: Float32Array): Promise<Schemas["VerticesResult"]> {
    rowsOf(vertices, 3, "vertices");
    const response = await this.raw("PUT", pathOf("/scenes/{scene_id}/meshes/{mesh_id}/vertices.bin", { scene_id: sceneId, mesh_id: meshId }), {
      body: littleEndian(vertices), contentType: "application/octet-stream",
    });
    return response.json() as Promise<Schemas["VerticesResult"]>;
  }

  // ------------------------------------------------------------ queries
  /** One ray. */
  async pick(sceneId: string, body: Schemas["PickRequest"]): Promise<Schemas["PickResult"] | Schemas["AllHitsResult"]> {
    return unwrap(await this.api.POST("/scenes/{scene_id}/pick", { params: { path: { scene_id: sceneId } }, body }));
  }

  /**
   * Many rays, binary (`POST /scenes/{id}/pick/batch.bin`).
   *
   * @param rays N×6 float32: ox, oy, oz, dx, dy, dz per ray
   */
  async pickBatch(sceneId: string, rays: Float32Array, options: BatchOptions = {}): Promise<PickRecords> {
    const data = await this.binaryQuery(sceneId, "/scenes/{scene_id}/pick/batch.bin", rays, 6, "rays", options);
    return readPickRecords(data);
  }

  /** Many rays, binary, with what each hit (`records=primitive`: triangle, shape, segment or point). */
  async pickBatchPrimitives(sceneId: string, rays: Float32Array, options: BatchOptions = {}):
      Promise<PrimitivePickRecords> {
    const data = await this.binaryQuery(sceneId, "/scenes/{scene_id}/pick/batch.bin", rays, 6, "rays",
                                        { ...options, records: "primitive" });
    return readPrimitivePickRecords(data);
  }

  /**
   * The nearest surface point to each point, binary (`POST /scenes/{id}/closest.bin`).
   *
   * @param points N×3 float32
   */
  async closest(sceneId: string, points: Float32Array, options: FilterOptions & { max_distance?: number } = {}):
      Promise<ClosestRecords> {
    return readClosestRecords(await this.binaryQuery(sceneId, "/scenes/{scene_id}/closest.bin", points, 3, "points", options));
  }

  /**
   * A sphere of `radius` swept along each ray, binary (`POST /scenes/{id}/sphere-cast.bin`).
   *
   * @param rays N×6 float32
   */
  async sphereCast(sceneId: string, rays: Float32Array,
                   options: FilterOptions & { radius: number; tmin?: number; tmax?: number }): Promise<SphereCastRecords> {
    return readSphereCastRecords(await this.binaryQuery(sceneId, "/scenes/{scene_id}/sphere-cast.bin", rays, 6, "rays", options));
  }

  /**
   * Whether each point is inside a closed object, binary (`POST /scenes/{id}/contains.bin`).
   *
   * @param points N×3 float32
   */
  async contains(sceneId: string, points: Float32Array, options: FilterOptions & { signed_distance?: boolean } = {}):
      Promise<ContainsRecords> {
    return readContainsRecords(await this.binaryQuery(sceneId, "/scenes/{scene_id}/contains.bin", points, 3, "points", options));
  }

  private async binaryQuery(sceneId: string, operation: keyof paths, values: Float32Array, width: number, what: string,
                            options: BinaryQuery): Promise<ArrayBuffer> {
    rowsOf(values, width, what);
    const path = pathOf(operation, { scene_id: sceneId }) + queryString(options);
    const response = await this.raw("POST", path, {
      body: littleEndian(values), contentType: "application/octet-stream", accept: "application/octet-stream",
    });
    return response.arrayBuffer();
  }
}

/** Bytes per ray and per point, for callers sizing their buffers. */
export { POINT_BYTES, RAY_BYTES };

/** Little-endian 4-byte numbers of `data` in this machine's order (a copy only on a big-endian machine). */
function littleEndianCopy(data: ArrayBuffer, kind: "f32" | "i32"): ArrayBuffer {
  if (new Uint8Array(new Uint32Array([1]).buffer)[0] === 1) return data;
  const view = new DataView(data);
  const out = kind === "f32" ? new Float32Array(data.byteLength / 4) : new Int32Array(data.byteLength / 4);
  for (let i = 0; i < out.length; i++) out[i] = kind === "f32" ? view.getFloat32(4 * i, true) : view.getInt32(4 * i, true);
  return out.buffer as ArrayBuffer;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The refusal of a response that is not 2xx, in the service's words when it gave them (`{"detail": ...}`). */
export async function errorOf(response: Response): Promise<ApiError> {
  const text = await response.text();
  try {
    const body = JSON.parse(text) as { detail?: unknown };
    const detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail ?? body);
    return new ApiError(response.status, detail, body);
  } catch {
    return new ApiError(response.status, text || response.statusText);
  }
}

function detailOf(error: unknown): string {
  if (error && typeof error === "object" && "detail" in error) {
    const detail = (error as { detail: unknown }).detail;
    return typeof detail === "string" ? detail : JSON.stringify(detail);
  }
  return typeof error === "string" ? error : JSON.stringify(error);
}

/** openapi-fetch's answer as its data, or an {@link ApiError}. */
function unwrap<T>(answer: { data?: T; error?: unknown; response: Response }): T {
  if (answer.error !== undefined || !answer.response.ok) {
    throw new ApiError(answer.response.status, detailOf(answer.error), answer.error);
  }
  return answer.data as T;
}

function unwrapEmpty(answer: { error?: unknown; response: Response }): void {
  if (answer.error !== undefined || !answer.response.ok) {
    throw new ApiError(answer.response.status, detailOf(answer.error), answer.error);
  }
}
