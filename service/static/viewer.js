// The bvh-pick viewer: renders a scene through GET /scenes/{id}/render and picks and selects
// on the very camera that render used (its X-Camera header), so a click lands on what is drawn.
// Hovering and dragging objects go over the scene's live channel (a WebSocket, /scenes/{id}/live),
// which also pushes every change of the scene, so that each open viewer shows every other one's edits.
// Once the camera rests, hovers are answered in the page from the image's ID buffer
// (POST /scenes/{id}/idbuffer, the GPU-picking method without a GPU); while it moves, they are picks.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);

  const KEY_STORAGE = "bvh-pick-api-key";
  // Pick tolerances for lines and points, in pixels about the cursor.
  const LINE_PICK_PIXELS = 4;
  const POINT_PICK_PIXELS = 6;
  const IMAGE_SIZE = { width: 640, height: 480 };
  // A left press that moves less than this (CSS pixels) is a click, not a drag.
  const CLICK_SLOP = 4;
  const ORBIT_RADIANS_PER_PIXEL = 0.008;
  const ZOOM_PER_WHEEL_UNIT = 0.0015;
  // Orbiting stops this close (radians) to the up axis: a view along up has no "up" left.
  const POLE_MARGIN = 0.01;
  // Reconnecting the live channel: the first wait, doubled after each failure up to the last.
  const RECONNECT_FIRST_MS = 250;
  const RECONNECT_MAX_MS = 8000;
  // The objects past a hello's first ones come over HTTP, this many a page (the most a page lists).
  const PAGE_OBJECTS = 10000;
  // A page older than the table (from a worker that has not seen its edits yet) is asked again after this.
  const STALE_PAGE_MS = 100;
  // Colours of the boxes drawn over the image: the object under the mouse, the one being dragged.
  const HOVER_COLOUR = "#ffb000";
  // The camera must rest this long (ms) after a render before the ID buffer of its image is fetched.
  const IDBUFFER_DELAY_MS = 300;
  const DRAG_COLOUR = "#ff3df5";
  // The lasso's outline as it is drawn: a window's solid, a crossing's dashed (as the marquee's).
  const LASSO_COLOURS = { window: "#2f7fff", crossing: "#2fbf4f" };
  // A lasso keeps a mouse position this far (image pixels) from its last point, so a slow stroke stays short.
  const LASSO_STEP = 2;

  const state = {
    sceneId: null,
    camera: null,   // the camera of the next render; null: let the service frame the scene
    shown: null,    // the camera of the image on screen: every pick and selection uses this one
    highlight: [],  // object ids tinted in the render (the selection)
    rendering: false,
    renderAgain: false,
    lastPick: null, // {camera, pixel, result}, for tests and the console
    lastSelect: null, // {camera, rect or polygon, containment, visibleOnly, objects}, likewise
    objects: {},    // the scene's object table by id, as the live channel keeps it up to date
    version: null,  // the scene's edit number that table is at
    complete: false, // whether the table holds every object: past a large scene's hello, once paged to the end
    live: false,    // whether the live channel is open and past its hello
    connects: 0,    // hellos received: reconnects show up as more than one
    events: 0,      // change events applied
    hover: null,    // id of the object under the mouse (null: none, or the background)
    hoverPicks: 0,  // hover picks answered
    hoverLookups: 0, // hovers answered from the ID buffer
    dragging: null, // id of the object being dragged
    // The last drag, for tests and the console: {object, grab (the ground point pressed on), ground (under
    // the mouse now), on (the object that ground belongs to), transform, moves, edits, version, done}.
    lastDrag: null,
  };
  window.viewer = state;

  const image = $("render");
  const stage = $("stage");
  const marker = $("marker");
  const marquee = $("marquee");
  const overlay = $("overlay");

  // ------------------------------------------------------------------ vectors
  const add = (a, b) => a.map((x, i) => x + b[i]);
  const sub = (a, b) => a.map((x, i) => x - b[i]);
  const scale = (a, s) => a.map((x) => x * s);
  const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
  const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
  const norm = (a) => Math.hypot(...a);
  const unit = (a) => scale(a, 1 / norm(a));
  const clamp = (x, lo, hi) => Math.min(hi, Math.max(lo, x));

  /** v turned by angle (radians) about the unit axis k (Rodrigues). */
  function rotate(v, k, angle) {
    const c = Math.cos(angle), s = Math.sin(angle);
    return add(add(scale(v, c), scale(cross(k, v), s)), scale(k, dot(k, v) * (1 - c)));
  }

  // ---------------------------------------------------------------------- API
  class ApiError extends Error {
    constructor(status, detail) {
      super(detail);
      this.status = status;
    }
  }

  function authHeaders(extra = {}) {
    const key = sessionStorage.getItem(KEY_STORAGE);
    return key ? { ...extra, Authorization: `Bearer ${key}` } : extra;
  }

  /** fetch() with the API key; a non-2xx answer throws ApiError with the service's detail. */
  async function api(path, options = {}) {
    const response = await fetch(path, { ...options, headers: authHeaders(options.headers) });
    if (response.ok) return response;
    let detail = response.statusText;
    try {
      detail = (await response.json()).detail;
    } catch (_) {
      // Not JSON: keep the status text.
    }
    if (response.status === 401) $("key-form").hidden = false;
    throw new ApiError(response.status, detail);
  }

  async function postJson(path, body) {
    const response = await api(path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    return response.json();
  }

  const scenePath = (suffix = "") => `scenes/${encodeURIComponent(state.sceneId)}${suffix}`;

  function say(message, isError = false) {
    $("status").textContent = message;
    $("status").classList.toggle("error", isError);
  }

  /** Run an async action, reporting its failure in the status line. */
  async function reporting(action) {
    try {
      await action();
    } catch (error) {
      say(error instanceof ApiError ? `${error.status}: ${error.message}` : String(error), true);
    }
  }

  // ------------------------------------------------------------------- scenes
  /** The curl line that uploads a mesh to this very service (behind a proxy's prefix too). */
  function uploadCommand() {
    const key = sessionStorage.getItem(KEY_STORAGE) ? ' -H "Authorization: Bearer <your key>"' : "";
    return `curl -F file=@mesh.obj${key} ${new URL("scenes/upload", location.href).href}`;
  }

  /** The list of scenes; returns their ids, in the service's order. */
  async function loadScenes() {
    const { scenes } = await (await api("scenes")).json();
    const list = $("scene-list");
    list.replaceChildren();
    for (const scene of scenes) {
      const button = document.createElement("button");
      button.type = "button";
      button.dataset.id = scene.id;
      button.textContent = `${scene.name ?? scene.id} (${scene.triangles} triangles)`;
      button.addEventListener("click", () => reporting(() => openScene(scene.id)));
      const item = document.createElement("li");
      item.append(button);
      list.append(item);
    }
    markCurrentScene();
    $("upload-command").textContent = uploadCommand();
    $("empty").hidden = scenes.length > 0;
    return scenes.map((scene) => scene.id);
  }

  function markCurrentScene() {
    for (const button of $("scene-list").querySelectorAll("button")) {
      button.classList.toggle("current", button.dataset.id === state.sceneId);
    }
  }

  async function openScene(id) {
    Object.assign(state, { sceneId: id, camera: null, shown: null, highlight: [], lastPick: null, objects: {},
                           version: null, complete: false, hover: null, dragging: null });
    live.table += 1;  // the previous scene's pages, if any are under way, are dropped
    forgetIdBuffer();
    history.replaceState(null, "", `?scene=${encodeURIComponent(id)}`);
    markCurrentScene();
    clearPick();
    showSelection([]);
    connectLive();
    const scene = await (await api(scenePath())).json();
    $("scene-title").textContent = `${scene.name ?? scene.id}: ${scene.object_count} objects, ` +
      `${scene.triangles} triangles`;
    say("");
    requestRender();
  }

  // ------------------------------------------------------------------- render
  /** Render now, or once more after the render under way: orbiting asks faster than renders come. */
  function requestRender() {
    if (state.rendering) {
      state.renderAgain = true;
      return;
    }
    state.rendering = true;
    reporting(async () => {
      try {
        do {
          state.renderAgain = false;
          await renderOnce();
        } while (state.renderAgain);
      } finally {
        state.rendering = false;
      }
    });
  }

  async function renderOnce() {
    const sceneId = state.sceneId;
    const camera = state.camera;
    // The service renders its current scene: at least the edits this table holds.
    const version = state.version;
    const query = new URLSearchParams();
    if (camera) {
      for (const name of ["position", "target", "up"]) query.set(name, camera[name].join(","));
      for (const name of ["fov_y_deg", "width", "height"]) query.set(name, String(camera[name]));
    } else {
      query.set("up", $("up-axis").value);
      query.set("width", String(IMAGE_SIZE.width));
      query.set("height", String(IMAGE_SIZE.height));
    }
    if (state.highlight.length) query.set("highlight", state.highlight.join(","));
    const response = await api(`${scenePath("/render")}?${query}`);
    const used = JSON.parse(response.headers.get("X-Camera"));
    const blob = await response.blob();
    if (sceneId !== state.sceneId) return;  // another scene was opened meanwhile
    const url = URL.createObjectURL(blob);
    await new Promise((resolve, reject) => {
      image.onload = resolve;
      image.onerror = () => reject(new Error("the render is not a readable image"));
      image.src = url;
    });
    URL.revokeObjectURL(url);
    image.width = used.width;
    image.height = used.height;
    image.hidden = false;
    state.shown = used;
    state.camera ??= structuredClone(used);
    image.dataset.camera = JSON.stringify(used);
    image.dataset.version = String(version ?? "");
    image.dataset.renders = String(Number(image.dataset.renders ?? 0) + 1);
    drawOverlay();
    scheduleIdBuffer();
  }

  // --------------------------------------------------------------- ID buffer
  // What every pixel of the image on screen shows (object ids, row-major), fetched once the camera has
  // rested IDBUFFER_DELAY_MS after a render; good while that image is on screen and no edit has come
  // since (the version it was asked at). The fetch is gzip-compressed by the browser's Accept-Encoding.
  const idBuffer = { camera: null, version: null, objects: null, timer: null, fetches: 0 };
  window.viewerIdBuffer = idBuffer;  // for tests and the console

  function forgetIdBuffer() {
    clearTimeout(idBuffer.timer);
    Object.assign(idBuffer, { camera: null, version: null, objects: null, timer: null });
    stage.dataset.idbuffer = "";
  }

  function scheduleIdBuffer() {
    clearTimeout(idBuffer.timer);
    idBuffer.timer = setTimeout(() => reporting(fetchIdBuffer), IDBUFFER_DELAY_MS);
  }

  async function fetchIdBuffer() {
    const { shown: camera, version, sceneId } = state;
    // A render under way ends by scheduling another fetch; a fresh buffer needs none.
    if (!camera || state.rendering || (idBuffer.camera === camera && idBuffer.version === version)) return;
    const response = await api(scenePath("/idbuffer"), {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(camera),
    });
    const body = await response.arrayBuffer();
    // The camera moved, the scene changed or another was opened meanwhile: this image is gone.
    if (camera !== state.shown || version !== state.version || sceneId !== state.sceneId) return;
    const width = Number(response.headers.get("X-Idbuffer-Width"));
    const height = Number(response.headers.get("X-Idbuffer-Height"));
    // The first plane: int32 object ids, little-endian like every browser's typed arrays.
    Object.assign(idBuffer, { camera, version, objects: new Int32Array(body, 0, width * height) });
    idBuffer.fetches += 1;
    stage.dataset.idbuffer = "ready";
    stage.dataset.idbufferFetches = String(idBuffer.fetches);
  }

  /** The object id the ID buffer shows at an image point (-1: none); undefined without a fresh buffer. */
  function idBufferLookup(point) {
    const camera = state.shown;
    if (!idBuffer.objects || idBuffer.camera !== camera || idBuffer.version !== state.version) return undefined;
    const x = clamp(Math.floor(point[0]), 0, camera.width - 1);
    const y = clamp(Math.floor(point[1]), 0, camera.height - 1);
    return idBuffer.objects[y * camera.width + x];
  }

  // ------------------------------------------------------------- live channel
  // Close codes of the live channel: a missing or wrong key, a scene that is gone.
  const CLOSE_POLICY = 1008;
  const CLOSE_NO_SCENE = 4404;

  /** A request that could not be answered because the live channel is closed (it reopens by itself). */
  class LiveClosed extends Error {}

  const live = {
    socket: null,
    nextId: 1,
    waiting: new Map(),         // request id -> {resolve, reject}
    backoff: RECONNECT_FIRST_MS,
    timer: null,
    versions: new Map(),        // object id -> version of the JSON held: an older one never replaces it
    table: 0,                   // hellos and resyncs taken: the pages asked for an earlier one are dropped
  };
  window.viewerLive = live;     // for tests and the console

  function liveUrl() {
    const url = new URL(scenePath("/live"), location.href);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    return url.href;
  }

  function showLive(text) {
    $("live-status").textContent = text;
    stage.dataset.live = state.live ? "open" : "closed";
  }

  function failWaiting(reason) {
    const waiting = [...live.waiting.values()];
    live.waiting.clear();
    for (const { reject } of waiting) reject(new LiveClosed(reason));
  }

  /** Open the live channel of the scene shown (closing the previous one); it reopens with backoff when it drops. */
  function connectLive() {
    clearTimeout(live.timer);
    const previous = live.socket;
    live.socket = null;   // its close event is then not a drop to recover from
    if (previous) previous.close(1000);
    failWaiting("the live channel is being reopened");
    state.live = false;
    const socket = new WebSocket(liveUrl());
    live.socket = socket;
    showLive("connecting…");
    socket.addEventListener("open", () => {
      // A browser cannot set the upgrade's Authorization header: the key goes in the first message.
      const key = sessionStorage.getItem(KEY_STORAGE);
      if (key) socket.send(JSON.stringify({ type: "auth", key }));
    });
    socket.addEventListener("message", (event) => {
      if (live.socket === socket && typeof event.data === "string") onLiveMessage(JSON.parse(event.data));
    });
    socket.addEventListener("close", (event) => {
      if (live.socket !== socket) return;
      live.socket = null;
      state.live = false;
      failWaiting(`the live channel closed (${event.code})`);
      if (event.code === CLOSE_POLICY) {
        // Reopened once a key is given (the key form starts the page again).
        showLive("needs the API key");
        $("key-form").hidden = false;
      } else if (event.code === CLOSE_NO_SCENE) {
        showLive("closed");
        say(event.reason || "this scene was deleted", true);
      } else {
        showLive(`reconnecting in ${(live.backoff / 1000).toFixed(1)} s`);
        live.timer = setTimeout(connectLive, live.backoff);
        live.backoff = Math.min(2 * live.backoff, RECONNECT_MAX_MS);
      }
    });
  }

  /** Send a request over the live channel; resolves with its answer's result. */
  function liveRequest(message) {
    if (!live.socket || !state.live) return Promise.reject(new LiveClosed("the live channel is not open"));
    const id = live.nextId++;
    live.socket.send(JSON.stringify({ ...message, id }));
    return new Promise((resolve, reject) => live.waiting.set(id, { resolve, reject }));
  }

  function onLiveMessage(message) {
    switch (message.type) {
      case "hello":
        live.backoff = RECONNECT_FIRST_MS;
        state.live = true;
        state.connects += 1;
        showLive("live");
        replaceTable(message);
        // What a dropped channel lost mid-drag is sent again.
        dragSteps.retry();
        edits.retry();
        return;
      case "resync":
        replaceTable(message);
        return;
      case "event":
        applyEvent(message);
        return;
      default: {
        const waiting = live.waiting.get(message.id);
        if (message.type === "error" && message.status === 401) $("key-form").hidden = false;
        if (!waiting) {
          if (message.type === "error") say(`${message.status}: ${message.detail}`, true);
          return;
        }
        live.waiting.delete(message.id);
        if (message.type === "error") waiting.reject(new ApiError(message.status, message.detail));
        else waiting.resolve(message.result);
      }
    }
  }

  /**
   * The table afresh, from a hello or a resync: a reconnect after missed edits redraws. A large scene's
   * table lists its first objects only (objects_next_after: where the rest begin); pageRest fetches them.
   */
  function replaceTable({ version, objects, objects_next_after: nextAfter }) {
    const missed = state.version !== null && state.version !== version;
    state.objects = Object.fromEntries(objects.map((object) => [object.id, object]));
    live.versions = new Map(objects.map((object) => [object.id, version]));
    live.table += 1;
    state.complete = nextAfter === null;
    forgetMissing();
    setVersion(version);
    if (missed) tableChanged();
    else drawOverlay();
    if (!state.complete) reporting(() => pageRest(live.table, version, nextAfter));
  }

  /**
   * The objects past a table's first ones, page by page (GET /scenes/{id}/objects), while the events
   * keep coming over the channel. Each page is as of its own version, newer than the table, and an event
   * may come before or after the page that already shows it: keepObjects takes an object from a page
   * only when nothing newer of it is held, and a removal is held as one (live.versions), so a page older
   * than it does not bring the object back. Ends when the table is replaced (a resync, a reconnect).
   */
  async function pageRest(table, version, after) {
    while (after !== null) {
      const query = new URLSearchParams({ after: String(after), limit: String(PAGE_OBJECTS) });
      const page = await (await api(`${scenePath("/objects")}?${query}`)).json();
      if (table !== live.table) return;
      if (page.version < version) {
        // A worker behind the table: the edits between would never come as events.
        await new Promise((resolve) => setTimeout(resolve, STALE_PAGE_MS));
        continue;
      }
      keepObjects(page.objects, page.version);
      after = page.next_after;
    }
    state.complete = true;
    drawOverlay();
  }

  /** Take objects' JSON as of ``version``, unless newer JSON of them is already held. */
  function keepObjects(objects, version) {
    let kept = false;
    for (const object of objects) {
      if ((live.versions.get(object.id) ?? -Infinity) > version) continue;
      state.objects[object.id] = object;
      live.versions.set(object.id, version);
      kept = true;
    }
    return kept;
  }

  function applyEvent(event) {
    state.events += 1;
    let changed;
    if (event.event === "removed") {
      changed = event.objects.length > 0;
      for (const id of event.objects) {
        delete state.objects[id];
        live.versions.set(id, event.version);
      }
      forgetMissing();
    } else {
      changed = keepObjects(event.objects, event.version);
    }
    setVersion(event.version);
    if (changed) tableChanged();
  }

  function setVersion(version) {
    const previous = state.version;
    state.version = Math.max(state.version ?? version, version);
    // An edit may have moved what the ID buffer shows: hovers are picks until a fresh one comes.
    if (state.version !== previous) scheduleIdBuffer();
    stage.dataset.version = String(state.version);
    stage.dataset.events = String(state.events);
  }

  /** Removed objects are no longer selected, hovered or dragged. */
  function forgetMissing() {
    const exists = (id) => Object.hasOwn(state.objects, id);
    if (state.highlight.some((id) => !exists(id))) {
      state.highlight = state.highlight.filter(exists);
      for (const item of [...$("selection-list").children]) {
        if (!exists(item.dataset.id)) item.remove();
      }
      const count = $("selection-list").children.length;
      $("selection-count").textContent = count ? `(${count})` : "";
    }
    if (state.hover !== null && !exists(state.hover)) setHover(null);
    if (state.dragging !== null && !exists(state.dragging)) state.dragging = null;
  }

  /** The scene changed: draw it again (the render is the service's, so it shows every edit so far). */
  function tableChanged() {
    drawOverlay();
    if (state.shown) requestRender();
  }

  /**
   * Runs `action` on the newest value pushed, one at a time: values pushed while one runs replace
   * each other, so the mouse, which moves faster than answers come, never builds a queue.
   */
  class Latest {
    constructor(action) {
      this.action = action;
      this.busy = false;
      this.pending = null;
      this.lost = null;     // the value a closed channel failed, sent again on reconnect
      this.idlers = [];
    }

    push(value) {
      this.pending = value;
      this.lost = null;
      this.run();
    }

    drop() {
      this.pending = null;
      this.lost = null;
    }

    retry() {
      if (this.lost && !this.pending) this.pending = this.lost;
      this.lost = null;
      this.run();
    }

    /** Resolves once nothing runs and nothing waits. */
    idle() {
      if (!this.busy && !this.pending) return Promise.resolve();
      return new Promise((resolve) => this.idlers.push(resolve));
    }

    async run() {
      if (this.busy) return;
      if (!this.pending) {
        for (const resolve of this.idlers.splice(0)) resolve();
        return;
      }
      const value = this.pending;
      this.pending = null;
      this.busy = true;
      try {
        await this.action(value);
      } catch (error) {
        if (error instanceof LiveClosed) this.lost = value;
        else say(error instanceof ApiError ? `${error.status}: ${error.message}` : String(error), true);
      } finally {
        this.busy = false;
      }
      this.run();
    }
  }

  // ------------------------------------------------------- rays and overlay
  /** The pinhole's frame, as the service builds it (bvh.Camera.pinhole). */
  function cameraBasis(camera) {
    const forward = unit(sub(camera.target, camera.position));
    const right = unit(cross(forward, camera.up));
    const tanY = Math.tan(camera.fov_y_deg * Math.PI / 360);
    return { forward, right, up: cross(right, forward), tanY, tanX: tanY * camera.width / camera.height };
  }

  /** The world ray through a continuous image point. */
  function cameraRay(camera, point) {
    const basis = cameraBasis(camera);
    const x = (2 * point[0] / camera.width - 1) * basis.tanX;
    const y = (1 - 2 * point[1] / camera.height) * basis.tanY;
    const direction = unit(add(basis.forward, add(scale(basis.right, x), scale(basis.up, y))));
    return { origin: camera.position, direction };
  }

  /** Image coordinates of a world point; null behind the eye. */
  function project(camera, basis, point) {
    const relative = sub(point, camera.position);
    const depth = dot(relative, basis.forward);
    if (!(depth > 1e-9 * norm(relative))) return null;
    return [camera.width / 2 * (1 + dot(relative, basis.right) / (depth * basis.tanX)),
            camera.height / 2 * (1 - dot(relative, basis.up) / (depth * basis.tanY))];
  }

  /** The 12 edges of a world box, as drawn by ``camera``; false when no edge is in front of the eye. */
  function drawBox(context, camera, [lo, hi], colour) {
    const basis = cameraBasis(camera);
    const corners = [0, 1, 2, 3, 4, 5, 6, 7].map((bits) =>
      project(camera, basis, [bits & 1 ? hi[0] : lo[0], bits & 2 ? hi[1] : lo[1], bits & 4 ? hi[2] : lo[2]]));
    context.strokeStyle = colour;
    context.lineWidth = 2;
    context.beginPath();
    let drawn = false;
    for (let a = 0; a < 8; a++) {
      for (const bit of [1, 2, 4]) {
        const b = a | bit;
        if (b === a || !corners[a] || !corners[b]) continue;
        context.moveTo(...corners[a]);
        context.lineTo(...corners[b]);
        drawn = true;
      }
    }
    context.stroke();
    return drawn;
  }

  /** The hovered object's box, and the dragged one's where the drag has taken it. */
  function drawOverlay() {
    const camera = state.shown;
    const drawn = [];
    if (camera) {
      if (overlay.width !== camera.width) overlay.width = camera.width;
      if (overlay.height !== camera.height) overlay.height = camera.height;
      const context = overlay.getContext("2d");
      context.clearRect(0, 0, overlay.width, overlay.height);
      const hovered = state.objects[state.hover];
      if (hovered?.bounds && state.hover !== state.dragging && drawBox(context, camera, hovered.bounds, HOVER_COLOUR)) {
        drawn.push(["hover", hovered.id]);
      }
      if (drag?.mode === "lasso" && drag.path.length > 1) {
        const containment = lassoContainment(drag.path);
        context.strokeStyle = LASSO_COLOURS[containment];
        context.lineWidth = 1.5;
        context.setLineDash(containment === "window" ? [] : [6, 4]);
        context.beginPath();
        drag.path.forEach(([x, y], i) => (i ? context.lineTo(x, y) : context.moveTo(x, y)));
        context.closePath();
        context.stroke();
        context.setLineDash([]);
        drawn.push(["lasso", containment]);
      }
      if (activeDrag?.object !== undefined && state.dragging === activeDrag.object) {
        const [lo, hi] = activeDrag.bounds;
        const moved = [add(lo, activeDrag.offset), add(hi, activeDrag.offset)];
        if (drawBox(context, camera, moved, DRAG_COLOUR)) drawn.push(["drag", activeDrag.object]);
      }
    }
    overlay.dataset.drawn = JSON.stringify(drawn);
  }

  function setHover(id) {
    if (state.hover === id) return;
    state.hover = id;
    stage.dataset.hover = id === null ? "" : String(id);
    drawOverlay();
  }

  // ------------------------------------------------------------------ hover
  let hoverSeq = 0;       // numbers the hovers pushed
  let hoverCleared = 0;   // hovers up to this one were pushed before the mouse left: their answers are stale

  const hovers = new Latest(async ({ point, seq }) => {
    const camera = state.shown;
    const result = await liveRequest({ type: "pick", ...cameraRay(camera, point) });
    state.hoverPicks += 1;
    stage.dataset.hoverPicks = String(state.hoverPicks);
    if (seq <= hoverCleared || camera !== state.shown || drag) return;
    setHover(result.hit ? result.object.id : null);
  });

  // ------------------------------------------------------------------- drag
  let activeDrag = null;  // the drag whose object is drawn moving

  /** Where the ray meets the plane through `point` square to `normal`; null if it never does. */
  function onPlane({ origin, direction }, point, normal) {
    const facing = dot(direction, normal);
    if (Math.abs(facing) < 1e-9) return null;
    const t = dot(sub(point, origin), normal) / facing;
    return t > 0 ? add(origin, scale(direction, t)) : null;
  }

  /**
   * A press in the move tool: on an object, the drag moves it (from the ground point under the press,
   * found by a pick that excludes the object); elsewhere it is a marquee. Never rejects.
   */
  async function grab(d) {
    try {
      const camera = state.shown;
      const ray = cameraRay(camera, d.startPoint);
      const hit = await liveRequest({ type: "pick", ...ray });
      const object = hit.hit ? state.objects[hit.object.id] : undefined;
      if (!object || camera !== state.shown) {
        d.mode = "select";
        if (d.moved && drag === d) showMarquee(d.startPoint, d.lastPoint);
        return;
      }
      const under = await liveRequest({ type: "pick", ...ray, exclude: [object.id] });
      Object.assign(d, { mode: "object", object: object.id, from: object.transform, bounds: object.bounds,
                         grab: under.hit ? under.point : hit.point, offset: [0, 0, 0] });
      activeDrag = d;
      state.dragging = object.id;
      stage.dataset.dragging = String(object.id);
      state.lastDrag = { object: object.id, grab: d.grab, ground: null, on: null, transform: null, moves: 0,
                         edits: 0, done: false };
      if (d.moved) dragSteps.push({ d, point: d.lastPoint });
      drawOverlay();
    } catch (error) {
      d.mode = "select";
      if (!(error instanceof LiveClosed)) say(String(error), true);
    }
  }

  /** One step of a drag: the ground under the mouse, the object's new place, its move sent. */
  const dragSteps = new Latest(async ({ d, point }) => {
    const ray = cameraRay(state.shown, point);
    const under = await liveRequest({ type: "pick", ...ray, exclude: [d.object] });
    // Off the ground's edge, the object slides on the level of the point it was grabbed at.
    const ground = under.hit ? under.point : onPlane(ray, d.grab, unit(state.shown.up));
    if (!ground) return;
    d.offset = sub(ground, d.grab);
    const transform = d.from.map((row, i) => row.map((value, j) => (j === 3 && i < 3 ? value + d.offset[i] : value)));
    Object.assign(state.lastDrag, { ground, on: under.hit ? under.object.id : null, transform,
                                    moves: state.lastDrag.moves + 1 });
    edits.push({ id: d.object, transform });
    drawOverlay();
  });

  /** Moves sent over the live channel, the newest only: a move waiting for the previous one is replaced. */
  const edits = new Latest(async (entry) => {
    const result = await liveRequest({ type: "edit", objects: [entry] });
    if (state.lastDrag?.object === entry.id) {
      state.lastDrag.edits += 1;
      state.lastDrag.version = result.version;
    }
    if (keepObjects(result.objects, result.version)) {
      setVersion(result.version);
      tableChanged();
    }
  });

  /** The mouse is up: the last move goes out, then the drag is over. */
  async function finishDrag(d, endPoint) {
    if (d.moved) dragSteps.push({ d, point: endPoint });
    await dragSteps.idle();
    await edits.idle();
    if (activeDrag === d) activeDrag = null;
    if (state.dragging === d.object) state.dragging = null;
    stage.dataset.dragging = "";
    state.lastDrag.done = true;
    drawOverlay();
  }

  // ------------------------------------------------------------ camera moves
  function orbit(dx, dy) {
    const camera = state.camera;
    const up = scale(camera.up, 1 / norm(camera.up));
    let offset = rotate(sub(camera.position, camera.target), up, -dx * ORBIT_RADIANS_PER_PIXEL);
    const polar = Math.acos(clamp(dot(offset, up) / norm(offset), -1, 1));
    const wanted = clamp(polar - dy * ORBIT_RADIANS_PER_PIXEL, POLE_MARGIN, Math.PI - POLE_MARGIN);
    const axis = cross(up, offset);
    if (norm(axis) > 0) offset = rotate(offset, scale(axis, 1 / norm(axis)), wanted - polar);
    camera.position = add(camera.target, offset);
    cameraMoved();
  }

  function zoom(wheelDelta) {
    const camera = state.camera;
    const offset = sub(camera.position, camera.target);
    camera.position = add(camera.target, scale(offset, Math.exp(wheelDelta * ZOOM_PER_WHEEL_UNIT)));
    cameraMoved();
  }

  function cameraMoved() {
    marker.hidden = true;  // it marks a point of the old view
    forgetIdBuffer();      // so is the ID buffer: hovers are picks until the camera rests again
    requestRender();
  }

  // ------------------------------------------------------------ pick, select
  /** Continuous image coordinates of a mouse position (the image may be drawn scaled). */
  function imagePoint(event) {
    const box = image.getBoundingClientRect();
    return [(event.clientX - box.left) * state.shown.width / box.width,
            (event.clientY - box.top) * state.shown.height / box.height];
  }

  // Fixed decimals, so that a number keeps its width as it changes (the panel never wraps them).
  const format = (numbers, digits = 4) => numbers.map((x) => x.toFixed(digits)).join(", ");

  function clearPick() {
    marker.hidden = true;
    for (const field of ["status", "object", "triangle", "distance", "barycentric", "normal"]) {
      $(`pick-${field}`).textContent = "–";
    }
    delete $("pick-object").dataset.id;
    $("pick-object").title = "";
  }

  /** What a pick hit, in words: a triangle's index, a segment and where on it, a point. */
  function describePrimitive(result) {
    if (result.primitive === "segment") return `segment ${result.segment.index} (s = ${result.segment.s.toFixed(3)})`;
    if (result.primitive === "point") return `point ${result.point_index}`;
    return result.triangle ?? "– (a shape)";
  }

  async function pick(point) {
    const camera = state.shown;
    // The pixel's centre, as the render cast it: the pick is what that pixel shows.
    const pixel = [clamp(Math.floor(point[0]), 0, camera.width - 1) + 0.5,
                   clamp(Math.floor(point[1]), 0, camera.height - 1) + 0.5];
    clearPick();
    $("pick-status").textContent = "picking…";
    // Lines and points are picked within a few pixels of the cursor, as editors pick them.
    const { results } = await postJson(scenePath("/pick/camera"),
                                       { ...camera, pixels: [pixel], line_pixels: LINE_PICK_PIXELS,
                                         point_pixels: POINT_PICK_PIXELS });
    const result = results[0];
    state.lastPick = { camera, pixel, result };
    marker.style.left = `${100 * pixel[0] / camera.width}%`;
    marker.style.top = `${100 * pixel[1] / camera.height}%`;
    marker.dataset.pixel = JSON.stringify(pixel);
    marker.hidden = false;
    $("pick-status").textContent = result.hit ? "hit" : "miss";
    if (!result.hit) return;
    $("pick-object").textContent = `${result.object.id} (${result.object.name ?? "unnamed"})`;
    $("pick-object").title = $("pick-object").textContent;
    $("pick-object").dataset.id = String(result.object.id);
    $("pick-triangle").textContent = describePrimitive(result);
    $("pick-distance").textContent = result.distance.toFixed(6);
    $("pick-barycentric").textContent = result.barycentric ? format(result.barycentric) : "–";
    $("pick-normal").textContent = result.normal ? format(result.normal) : "–";
  }

  /** As in CAD tools: a drag to the right is a window (what lies wholly inside), to the left a crossing. */
  const containmentOf = (from, to) => (to[0] >= from[0] ? "window" : "crossing");

  async function select(from, to) {
    const camera = state.shown;
    const containment = containmentOf(from, to);
    // The service wants a rectangle of non-zero size: a thin drag still selects a 1-pixel band.
    const x1 = Math.abs(to[0] - from[0]) < 1 ? from[0] + 1 : to[0];
    const y1 = Math.abs(to[1] - from[1]) < 1 ? from[1] + 1 : to[1];
    const rect = [Math.min(from[0], x1), Math.min(from[1], y1), Math.max(from[0], x1), Math.max(from[1], y1)];
    await selectRegion({ rect }, containment);
  }

  /**
   * As CAD tools' lassos: drawn clockwise on screen, a window; counter-clockwise, a crossing. In image
   * pixels (y down), a clockwise outline has a positive shoelace sum.
   */
  function lassoContainment(path) {
    let twiceArea = 0;
    path.forEach(([x, y], i) => {
      const [nx, ny] = path[(i + 1) % path.length];
      twiceArea += x * ny - nx * y;
    });
    return twiceArea > 0 ? "window" : "crossing";
  }

  async function selectLasso(path) {
    await selectRegion({ polygon: path }, lassoContainment(path));
  }

  async function selectRegion(region, containment) {
    const camera = state.shown;
    const visibleOnly = $("visible-only").checked;
    const body = { ...camera, ...region, containment };
    if (visibleOnly) body.visible_only = true;
    const { objects } = await postJson(scenePath("/select"), body);
    state.lastSelect = { camera, ...region, containment, visibleOnly, objects };
    showSelection(objects);
    state.highlight = objects.map((object) => object.id);
    requestRender();
  }

  function showSelection(objects) {
    const list = $("selection-list");
    list.replaceChildren(...objects.map((object) => {
      const item = document.createElement("li");
      item.dataset.id = String(object.id);
      item.textContent = `${object.id} (${object.name ?? "unnamed"})`;
      item.title = item.textContent;
      return item;
    }));
    $("selection-count").textContent = objects.length ? `(${objects.length})` : "";
  }

  // ------------------------------------------------------------------ mouse
  // {button, start: [clientX, clientY], last: [...], startPoint, lastPoint, moved, mode}; mode: "orbit",
  // "select" (a marquee), "grab" (the move tool waits to know what was pressed on) or "object" (moving one).
  let drag = null;

  function showMarquee(from, to) {
    const [w, h] = [state.shown.width, state.shown.height];
    const containment = containmentOf(from, to);
    marquee.className = containment;
    marquee.dataset.containment = containment;
    Object.assign(marquee.style, {
      left: `${100 * Math.min(from[0], to[0]) / w}%`,
      top: `${100 * Math.min(from[1], to[1]) / h}%`,
      width: `${100 * Math.abs(to[0] - from[0]) / w}%`,
      height: `${100 * Math.abs(to[1] - from[1]) / h}%`,
    });
    marquee.hidden = false;
  }

  stage.addEventListener("contextmenu", (event) => event.preventDefault());
  stage.addEventListener("auxclick", (event) => event.preventDefault());
  image.addEventListener("dragstart", (event) => event.preventDefault());

  stage.addEventListener("mousedown", (event) => {
    if (!state.shown || drag) return;
    event.preventDefault();  // no text selection, no middle-button autoscroll
    const point = imagePoint(event);
    let mode = "orbit";
    if (event.button === 0) {
      const tool = $("left-drag").value;
      mode = tool === "move" && state.live ? "grab" : tool === "lasso" ? "lasso" : "select";
    }
    drag = { button: event.button, start: [event.clientX, event.clientY], last: [event.clientX, event.clientY],
             startPoint: point, lastPoint: point, moved: false, mode, path: [point] };
    if (mode === "grab") {
      hoverCleared = hoverSeq;
      drag.grabbed = grab(drag);
    }
  });

  stage.addEventListener("mousemove", (event) => {
    if (drag || !state.shown) return;
    const point = imagePoint(event);
    const seen = idBufferLookup(point);
    if (seen !== undefined) {
      // Answered here: any pick still on its way is older than this.
      hoverCleared = ++hoverSeq;
      hovers.drop();
      state.hoverLookups += 1;
      stage.dataset.hoverLookups = String(state.hoverLookups);
      setHover(seen >= 0 ? seen : null);
      return;
    }
    if (!state.live) return;
    hovers.push({ point, seq: ++hoverSeq });
  });

  stage.addEventListener("mouseleave", () => {
    hoverCleared = hoverSeq;
    hovers.drop();
    setHover(null);
  });

  window.addEventListener("mousemove", (event) => {
    if (!drag) return;
    const position = [event.clientX, event.clientY];
    drag.moved ||= Math.hypot(position[0] - drag.start[0], position[1] - drag.start[1]) > CLICK_SLOP;
    if (drag.button === 0) {
      drag.lastPoint = imagePoint(event);
      if (drag.moved && drag.mode === "select") showMarquee(drag.startPoint, drag.lastPoint);
      if (drag.mode === "lasso") {
        const last = drag.path[drag.path.length - 1];
        if (Math.hypot(drag.lastPoint[0] - last[0], drag.lastPoint[1] - last[1]) >= LASSO_STEP) {
          drag.path.push(drag.lastPoint);
          drawOverlay();
        }
      }
      if (drag.moved && drag.mode === "object") dragSteps.push({ d: drag, point: drag.lastPoint });
    } else if (state.camera) {
      orbit(position[0] - drag.last[0], position[1] - drag.last[1]);
    }
    drag.last = position;
  });

  window.addEventListener("mouseup", (event) => {
    if (!drag || event.button !== drag.button) return;
    const d = drag;
    drag = null;
    marquee.hidden = true;
    if (d.button !== 0) return;
    const endPoint = imagePoint(event);
    reporting(async () => {
      if (d.mode === "grab") await d.grabbed;
      if (d.mode === "object") {
        await finishDrag(d, endPoint);
        if (!d.moved) await pick(d.startPoint);
      } else if (d.mode === "lasso") {
        drawOverlay();  // the outline goes: the selection's highlight shows what it took
        await (d.moved && d.path.length >= 3 ? selectLasso(d.path) : pick(d.startPoint));
      } else {
        await (d.moved ? select(d.startPoint, endPoint) : pick(d.startPoint));
      }
    });
  });

  stage.addEventListener("wheel", (event) => {
    if (!state.camera) return;
    event.preventDefault();
    // Lines or pages of scrolling count as 40 pixels each.
    zoom(event.deltaMode === WheelEvent.DOM_DELTA_PIXEL ? event.deltaY : 40 * event.deltaY);
  }, { passive: false });

  // ---------------------------------------------------------------- controls
  function resetView() {
    if (!state.sceneId) return;
    state.camera = null;
    marker.hidden = true;
    requestRender();
  }

  $("up-axis").addEventListener("change", resetView);
  $("reset-view").addEventListener("click", resetView);
  $("clear-selection").addEventListener("click", () => {
    showSelection([]);
    state.highlight = [];
    if (state.sceneId) requestRender();
  });

  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY_STORAGE, $("api-key").value.trim());
    $("key-form").hidden = true;
    say("");
    start();
  });

  /** List the scenes, then open the one already open, else the one named by ?scene=, else the first. */
  function start() {
    reporting(async () => {
      const ids = await loadScenes();
      const wanted = state.sceneId ?? new URLSearchParams(location.search).get("scene");
      if (wanted && ids.includes(wanted)) {
        await openScene(wanted);
      } else if (ids.length) {
        await openScene(ids[0]);
        if (wanted) say(`no scene ${JSON.stringify(wanted)} here: showing the first one`, true);
      }
    });
  }

  start();
})();
