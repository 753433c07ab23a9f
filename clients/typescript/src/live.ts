/**
 * The live channel of a scene (`/scenes/{id}/live`): picks and edits over one WebSocket, and the
 * scene's object table kept current from its change events.
 *
 * The protocol is the service's (the `GET /scenes/{scene_id}/live` description of its OpenAPI
 * document): a `hello` gives the table's first objects as of a version, the rest are paged over
 * HTTP while events keep coming, and each object is taken from a page or an event only when its
 * version is above the one held. A client that falls too far behind is sent a `resync`, a table
 * afresh, and starts over from it as from a hello. A dropped connection is opened again with
 * backoff; its new hello replaces the table, and the requests that had no answer are sent again
 * (edits with the same `id`, which the service treats as an idempotency key: applied once).
 */

import { littleEndian, readPickRecords, readPrimitivePickRecords, rowsOf, type PickRecords,
  type PrimitivePickRecords } from "./binary.js";
import { ApiError, newKey, PickClient, type Schemas } from "./http.js";

/** The first 4 bytes of a binary batch frame and of its answer ("pick batch", version 1). */
const MAGIC = [0x50, 0x4b, 0x42, 0x31];
/** MAGIC, then the request id as a little-endian uint32. */
const HEADER_BYTES = 8;

/** Close codes the service uses: a missing or wrong key (1008), a frame over its size limit (1009), no such scene (4404). */
export const CLOSE_POLICY = 1008;
export const CLOSE_TOO_BIG = 1009;
export const CLOSE_NO_SCENE = 4404;

/** The WebSocket the live channel needs: what both the browser's and the `ws` package's provide. */
export interface LiveSocket {
  binaryType: string;
  send(data: string | Uint8Array): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: string, listener: (event: never) => void): void;
}

/**
 * Opens a WebSocket to `url`. `authMessage`: whether the token must go in the first message
 * (a browser cannot set the upgrade's `Authorization` header; `ws` in Node can).
 */
export type OpenSocket = (url: string, token: string | undefined) => { socket: LiveSocket; authMessage: boolean };

/** The browser's WebSocket (any global `WebSocket`: browsers, Deno, Node 22+). */
export const globalSocket: OpenSocket = (url) => {
  const WebSocketClass = (globalThis as { WebSocket?: new (url: string) => unknown }).WebSocket;
  if (WebSocketClass === undefined) {
    throw new Error("there is no global WebSocket here (Node 20 has none): import LiveScene from "
                    + "'@bvh-pick/client/node', which opens it with the ws package");
  }
  return { socket: new WebSocketClass(url) as LiveSocket, authMessage: true };
};

export type ObjectOut = Schemas["ObjectOut"];
export type EventMessage = Schemas["EventMessage"];
export type PickResult = Schemas["PickResult"] | Schemas["AllHitsResult"];
export type EditResult = Schemas["ObjectBatchResult"];
export type BatchOptionsMessage = Omit<Schemas["BatchOptionsMessage"], "type" | "id">;
type TableMessage = Schemas["HelloMessage"] | Schemas["ResyncMessage"];

/** A request the live channel could not answer because it closed for good (see {@link LiveScene.close}). */
export class LiveClosed extends Error {
  constructor(message: string, readonly code?: number) {
    super(message);
    this.name = "LiveClosed";
  }
}

export interface LiveEvents {
  /** A hello: the channel is open (again); `connects` counts the hellos. */
  open: { version: number; connects: number };
  /** The table was replaced, from a hello or a resync (the client fell behind). */
  table: { reason: "hello" | "resync"; version: number };
  /** Every object of the table is held (the pages past the hello's first objects are in). */
  complete: { version: number };
  /** A change event, once applied to the table. */
  event: EventMessage;
  /** The channel closed; `retryMs` is when it is opened again, null when it is not (refused, scene gone, closed). */
  close: { code: number; reason: string; retryMs: number | null };
  /** An error message no request of this client waits for, or a page that failed. */
  error: { status: number; detail: string };
}

export interface LiveOptions {
  /** The service's base URL (http or https): the channel is its ws or wss twin. */
  baseUrl: string;
  sceneId: string;
  /** An API key or a signed token. */
  token?: string;
  /** How to open the WebSocket (default: the global WebSocket; `@bvh-pick/client/node` uses `ws`). */
  openSocket?: OpenSocket;
  /** The HTTP client that pages the objects past a hello (default: one on the same base URL and token). */
  http?: PickClient;
  /** The first wait before reopening a dropped channel, doubled each time up to `reconnectMaxMs` (250, 5000). */
  reconnectMs?: number;
  reconnectMaxMs?: number;
  /** Wait before asking again for a page older than the table (a worker that has not seen its edits yet). */
  stalePageMs?: number;
}

interface Pending {
  frame: string | Uint8Array;
  resolve: (value: never) => void;
  reject: (error: Error) => void;
  /** A binary batch's record layout, fixed when it was sent. */
  primitive?: boolean;
}

type Listener<T> = (value: T) => void;

/**
 * One scene's live channel, opened at construction and kept open until {@link close}.
 *
 * ```ts
 * const live = new LiveScene({ baseUrl, sceneId, token });
 * await live.ready;                     // the first hello
 * const hit = await live.pick({ origin: [0, 0, 5], direction: [0, 0, -1] });
 * live.on("event", (event) => redraw(event.objects));
 * await live.edit([{ id: 3, transform }]);
 * ```
 */
export class LiveScene {
  readonly sceneId: string;
  /** The scene's objects by id, as of {@link version}: the hello's, then the pages' and events'. */
  readonly objects = new Map<number, ObjectOut>();
  /** The newest version heard (hello, resync, event, page or edit answer); null before the first hello. */
  version: number | null = null;
  /** Whether {@link objects} holds every object (false while the pages past a hello come in). */
  complete = false;
  /** Whether the channel is open and past its hello. */
  open = false;
  /** Hellos received: more than one after reconnects. */
  connects = 0;
  /** Resyncs received (the client fell too far behind). */
  resyncs = 0;
  /** Resolves at the first hello; rejects when the channel is refused before it. */
  readonly ready: Promise<void>;

  private readonly url: string;
  private readonly token: string | undefined;
  private readonly openSocket: OpenSocket;
  private readonly http: PickClient;
  private readonly reconnectMs: number;
  private readonly reconnectMaxMs: number;
  private readonly stalePageMs: number;
  private socket: LiveSocket | null = null;
  private closed = false;
  private backoff: number;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private nextId = 1;
  /** Requests without an answer, in the order sent: sent again, in order, after a reconnect. */
  private readonly pending = new Map<string, Pending>();
  /** Per object id, the version of what is held of it (a removal too: a page older than it does not bring it back). */
  private versions = new Map<number, number>();
  /** Tables taken: the pages asked for an earlier one are dropped. */
  private table = 0;
  private batchOptionsFrame: string | null = null;
  private batchPrimitive = false;
  private readonly listeners = new Map<keyof LiveEvents, Set<Listener<never>>>();
  private readyResolve!: () => void;
  private readyReject!: (error: Error) => void;

  constructor(options: LiveOptions) {
    this.sceneId = options.sceneId;
    const url = new URL(`${options.baseUrl.replace(/\/+$/, "")}/scenes/${encodeURIComponent(options.sceneId)}/live`);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    this.url = url.href;
    this.token = options.token;
    this.openSocket = options.openSocket ?? globalSocket;
    this.http = options.http ?? new PickClient({ baseUrl: options.baseUrl, token: options.token });
    this.reconnectMs = options.reconnectMs ?? 250;
    this.reconnectMaxMs = options.reconnectMaxMs ?? 5000;
    this.stalePageMs = options.stalePageMs ?? 50;
    this.backoff = this.reconnectMs;
    this.ready = new Promise((resolve, reject) => {
      this.readyResolve = resolve;
      this.readyReject = reject;
    });
    // Whoever does not await `ready` still hears of a refusal through the "close" event.
    this.ready.catch(() => undefined);
    this.connect();
  }

  /** Listen to `type`; returns the function that stops listening. */
  on<K extends keyof LiveEvents>(type: K, listener: Listener<LiveEvents[K]>): () => void {
    let set = this.listeners.get(type);
    if (!set) this.listeners.set(type, (set = new Set()));
    set.add(listener as Listener<never>);
    return () => set.delete(listener as Listener<never>);
  }

  /** Resolves once `condition(this)` holds, checked after every change (rejects after `timeoutMs`). */
  until(condition: (live: this) => boolean, timeoutMs = 10_000): Promise<void> {
    if (condition(this)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const stops: (() => void)[] = [];
      const done = (error?: Error) => {
        clearTimeout(timer);
        for (const stop of stops) stop();
        if (error) reject(error);
        else resolve();
      };
      const check = () => {
        if (condition(this)) done();
      };
      const timer = setTimeout(() => done(new Error(`not reached within ${timeoutMs} ms`)), timeoutMs);
      for (const type of ["open", "table", "complete", "event", "close"] as const) stops.push(this.on(type, check));
    });
  }

  // ------------------------------------------------------------ requests
  /** One ray (the `POST /scenes/{id}/pick` body): answered in order with the other requests. */
  pick(request: Schemas["PickRequest"]): Promise<PickResult> {
    return this.request({ ...request, type: "pick", id: this.nextId++ });
  }

  /**
   * Change objects (the `PATCH /scenes/{id}/objects` entries), all or nothing. The message's id is
   * random, and the same when sent again after a reconnect: the service applies it once.
   */
  async edit(objects: Schemas["ObjectBatchUpdate"][]): Promise<EditResult> {
    const result = await this.request<EditResult>({ type: "edit", id: `edit-${newKey()}`, objects });
    if (result.objects) this.keep(result.objects, result.version);
    return result;
  }

  /** Options of the binary batches that follow (kept, and set again on a reconnect). */
  batchOptions(options: BatchOptionsMessage): Promise<Schemas["BatchOptionsOut"]> {
    const message = { ...options, type: "batch_options", id: this.nextId++ };
    this.batchOptionsFrame = JSON.stringify({ ...message, id: null });
    this.batchPrimitive = options.records === "primitive";
    return this.request(message);
  }

  /**
   * Many rays in one binary frame.
   *
   * @param rays N×6 float32: ox, oy, oz, dx, dy, dz per ray
   * @returns the records of the layout set by {@link batchOptions} (`records`: surface by default)
   */
  pickBatch(rays: Float32Array): Promise<PickRecords | PrimitivePickRecords> {
    rowsOf(rays, 6, "rays");
    const id = this.nextId++ >>> 0;
    const body = littleEndian(rays);
    const frame = new Uint8Array(HEADER_BYTES + body.byteLength);
    frame.set(MAGIC, 0);
    new DataView(frame.buffer).setUint32(4, id, true);
    frame.set(body, HEADER_BYTES);
    return new Promise((resolve, reject) => {
      this.pending.set(`bin:${id}`, { frame, resolve, reject, primitive: this.batchPrimitive });
      if (this.open) this.socket?.send(frame);
    });
  }

  private request<T>(message: { type: string; id: string | number; [field: string]: unknown }): Promise<T> {
    const frame = JSON.stringify(message);
    return new Promise<T>((resolve, reject) => {
      this.pending.set(`text:${JSON.stringify(message.id)}`, { frame, resolve: resolve as (value: never) => void, reject });
      if (this.open) this.socket?.send(frame);
    });
  }

  /** Close the channel for good: what waits for an answer is refused with {@link LiveClosed}. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.open = false;
    const socket = this.socket;
    this.socket = null;
    socket?.close(1000);
    this.failPending(new LiveClosed("the live channel was closed"));
    this.readyReject(new LiveClosed("the live channel was closed"));
  }

  // ------------------------------------------------------------ connection
  private connect(): void {
    if (this.closed) return;
    const { socket, authMessage } = this.openSocket(this.url, this.token);
    this.socket = socket;
    socket.binaryType = "arraybuffer";
    socket.addEventListener("open", () => {
      if (authMessage && this.token !== undefined && this.socket === socket) {
        socket.send(JSON.stringify({ type: "auth", key: this.token }));
      }
    });
    socket.addEventListener("message", (event: { data: unknown }) => {
      if (this.socket !== socket) return;
      if (typeof event.data === "string") this.onText(event.data);
      else if (event.data instanceof ArrayBuffer) this.onBinary(event.data);
    });
    // A failed connection is followed by its close event, which reopens it.
    socket.addEventListener("error", () => undefined);
    socket.addEventListener("close", (event: { code: number; reason: string }) => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.open = false;
      this.onClose(event.code, event.reason);
    });
  }

  private onClose(code: number, reason: string): void {
    if (code === CLOSE_POLICY || code === CLOSE_NO_SCENE) {
      // Refused (the key) or gone (the scene): opening again would be refused again.
      this.closed = true;
      const error = new LiveClosed(`the live channel was closed (${code}): ${reason}`, code);
      this.failPending(error);
      this.readyReject(error);
      this.emit("close", { code, reason, retryMs: null });
      return;
    }
    if (code === CLOSE_TOO_BIG) {
      // One of the frames sent was over the service's limit: sending them again would close it again.
      this.failPending(new LiveClosed(`a frame was over the service's size limit (${code}): ${reason}`, code));
    }
    const retryMs = this.backoff;
    this.backoff = Math.min(2 * this.backoff, this.reconnectMaxMs);
    this.timer = setTimeout(() => this.connect(), retryMs);
    this.emit("close", { code, reason, retryMs });
  }

  private failPending(error: Error): void {
    const waiting = [...this.pending.values()];
    this.pending.clear();
    for (const request of waiting) request.reject(error);
  }

  private onText(text: string): void {
    const message = JSON.parse(text) as { type: string };
    switch (message.type) {
      case "hello":
        this.onHello(message as Schemas["HelloMessage"]);
        return;
      case "resync":
        this.resyncs += 1;
        this.replaceTable(message as Schemas["ResyncMessage"], "resync");
        return;
      case "event":
        this.applyEvent(message as EventMessage);
        return;
      default:
        this.onAnswer(message as { type: string; id: unknown; result?: unknown; status?: number; detail?: string });
    }
  }

  private onHello(hello: Schemas["HelloMessage"]): void {
    this.open = true;
    this.connects += 1;
    this.backoff = this.reconnectMs;
    this.replaceTable(hello, "hello");
    // What the last connection left unanswered, in its order, after the batch options it was sent under.
    const socket = this.socket;
    if (this.batchOptionsFrame !== null) socket?.send(this.batchOptionsFrame);
    for (const request of this.pending.values()) socket?.send(request.frame);
    this.readyResolve();
    this.emit("open", { version: hello.version, connects: this.connects });
  }

  private onAnswer(message: { type: string; id: unknown; result?: unknown; status?: number; detail?: string }): void {
    const isError = message.type === "error";
    // A binary frame's refusal carries its header's id, a number: it may be a text request's or a batch's.
    const key = [`text:${JSON.stringify(message.id)}`, `bin:${String(message.id)}`]
      .find((candidate) => this.pending.has(candidate));
    const request = key === undefined ? undefined : this.pending.get(key);
    if (key === undefined || request === undefined) {
      if (isError) this.emit("error", { status: message.status ?? 0, detail: message.detail ?? "" });
      return;
    }
    this.pending.delete(key);
    if (isError) request.reject(new ApiError(message.status ?? 0, message.detail ?? ""));
    else request.resolve(message.result as never);
  }

  private onBinary(data: ArrayBuffer): void {
    if (data.byteLength < HEADER_BYTES) return;
    const id = new DataView(data).getUint32(4, true);
    const request = this.pending.get(`bin:${id}`);
    if (!request) return;
    this.pending.delete(`bin:${id}`);
    try {
      const records = request.primitive ? readPrimitivePickRecords(data, HEADER_BYTES) : readPickRecords(data, HEADER_BYTES);
      request.resolve(records as never);
    } catch (error) {
      request.reject(error as Error);
    }
  }

  // ------------------------------------------------------------ the table
  /** The table afresh, from a hello or a resync; the objects past its first ones are paged over HTTP. */
  private replaceTable(message: TableMessage, reason: "hello" | "resync"): void {
    this.objects.clear();
    this.versions = new Map();
    for (const object of message.objects) {
      this.objects.set(object.id, object);
      this.versions.set(object.id, message.version);
    }
    this.table += 1;
    this.version = message.version;
    this.complete = message.objects_next_after === null;
    this.emit("table", { reason, version: message.version });
    if (this.complete) this.emit("complete", { version: message.version });
    else void this.pageRest(this.table, message.version, message.objects_next_after);
  }

  /**
   * The objects past a table's first ones, page by page, while events keep coming: each page is
   * as of its own version, and an object is taken from it only when nothing newer of it is held.
   * Ends early when the table is replaced.
   */
  private async pageRest(table: number, version: number, after: number | null): Promise<void> {
    try {
      while (after !== null) {
        const page = await this.http.listObjects(this.sceneId, after);
        if (table !== this.table) return;
        if (page.version < version) {
          // A worker behind the table: the edits in between would never come as events.
          await new Promise((resolve) => setTimeout(resolve, this.stalePageMs));
          continue;
        }
        this.keep(page.objects, page.version);
        after = page.next_after;
      }
    } catch (error) {
      if (table !== this.table) return;
      const status = error instanceof ApiError ? error.status : 0;
      this.emit("error", { status, detail: `paging the scene's objects failed: ${String(error)}` });
      // The next table (a reconnect) pages again; until then, the table stays incomplete.
      return;
    }
    if (table !== this.table) return;
    this.complete = true;
    this.emit("complete", { version: this.version ?? version });
  }

  /** Take objects' JSON as of `version`, unless newer JSON of them is already held. */
  private keep(objects: readonly ObjectOut[], version: number): void {
    for (const object of objects) {
      if ((this.versions.get(object.id) ?? -Infinity) > version) continue;
      this.objects.set(object.id, object);
      this.versions.set(object.id, version);
    }
    this.version = Math.max(this.version ?? version, version);
  }

  private applyEvent(event: EventMessage): void {
    if (event.event === "removed") {
      for (const id of event.objects as number[]) {
        if ((this.versions.get(id) ?? -Infinity) > event.version) continue;
        this.objects.delete(id);
        this.versions.set(id, event.version);
      }
      this.version = Math.max(this.version ?? event.version, event.version);
    } else {
      this.keep(event.objects as ObjectOut[], event.version);
    }
    this.emit("event", event);
  }

  private emit<K extends keyof LiveEvents>(type: K, value: LiveEvents[K]): void {
    for (const listener of [...(this.listeners.get(type) ?? [])]) (listener as Listener<LiveEvents[K]>)(value);
  }
}
