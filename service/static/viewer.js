// The bvh-pick viewer: renders a scene through GET /scenes/{id}/render and picks and selects
// on the very camera that render used (its X-Camera header), so a click lands on what is drawn.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);

  const KEY_STORAGE = "bvh-pick-api-key";
  const IMAGE_SIZE = { width: 640, height: 480 };
  // A left press that moves less than this (CSS pixels) is a click, not a drag.
  const CLICK_SLOP = 4;
  const ORBIT_RADIANS_PER_PIXEL = 0.008;
  const ZOOM_PER_WHEEL_UNIT = 0.0015;
  // Orbiting stops this close (radians) to the up axis: a view along up has no "up" left.
  const POLE_MARGIN = 0.01;

  const state = {
    sceneId: null,
    camera: null,   // the camera of the next render; null: let the service frame the scene
    shown: null,    // the camera of the image on screen: every pick and selection uses this one
    highlight: [],  // object ids tinted in the render (the selection)
    rendering: false,
    renderAgain: false,
    lastPick: null, // {camera, pixel, result}, for tests and the console
    lastSelect: null, // {camera, rect, containment, objects}, likewise
  };
  window.viewer = state;

  const image = $("render");
  const stage = $("stage");
  const marker = $("marker");
  const marquee = $("marquee");

  // ------------------------------------------------------------------ vectors
  const add = (a, b) => a.map((x, i) => x + b[i]);
  const sub = (a, b) => a.map((x, i) => x - b[i]);
  const scale = (a, s) => a.map((x) => x * s);
  const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
  const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
  const norm = (a) => Math.hypot(...a);
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
    return `curl -F file=@mesh.obj${key} ${new URL("scenes", location.href).href}`;
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
    Object.assign(state, { sceneId: id, camera: null, shown: null, highlight: [], lastPick: null });
    history.replaceState(null, "", `?scene=${encodeURIComponent(id)}`);
    markCurrentScene();
    clearPick();
    showSelection([]);
    const scene = await (await api(scenePath())).json();
    $("scene-title").textContent = `${scene.name ?? scene.id}: ${scene.objects.length} objects, ` +
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
    image.dataset.renders = String(Number(image.dataset.renders ?? 0) + 1);
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

  async function pick(point) {
    const camera = state.shown;
    // The pixel's centre, as the render cast it: the pick is what that pixel shows.
    const pixel = [clamp(Math.floor(point[0]), 0, camera.width - 1) + 0.5,
                   clamp(Math.floor(point[1]), 0, camera.height - 1) + 0.5];
    clearPick();
    $("pick-status").textContent = "picking…";
    const { results } = await postJson(scenePath("/pick/camera"), { ...camera, pixels: [pixel] });
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
    $("pick-triangle").textContent = result.triangle ?? "– (a shape)";
    $("pick-distance").textContent = result.distance.toFixed(6);
    $("pick-barycentric").textContent = result.barycentric ? format(result.barycentric) : "–";
    $("pick-normal").textContent = format(result.normal);
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
    const { objects } = await postJson(scenePath("/select"), { ...camera, rect, containment });
    state.lastSelect = { camera, rect, containment, objects };
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
  let drag = null;  // {button, start: [clientX, clientY], last: [...], startPoint, moved}

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
    drag = { button: event.button, start: [event.clientX, event.clientY], last: [event.clientX, event.clientY],
             startPoint: imagePoint(event), moved: false };
  });

  window.addEventListener("mousemove", (event) => {
    if (!drag) return;
    const position = [event.clientX, event.clientY];
    drag.moved ||= Math.hypot(position[0] - drag.start[0], position[1] - drag.start[1]) > CLICK_SLOP;
    if (drag.button === 0) {
      if (drag.moved) showMarquee(drag.startPoint, imagePoint(event));
    } else if (state.camera) {
      orbit(position[0] - drag.last[0], position[1] - drag.last[1]);
    }
    drag.last = position;
  });

  window.addEventListener("mouseup", (event) => {
    if (!drag || event.button !== drag.button) return;
    const { button, moved, startPoint } = drag;
    drag = null;
    marquee.hidden = true;
    if (button !== 0) return;
    const endPoint = imagePoint(event);
    reporting(() => (moved ? select(startPoint, endPoint) : pick(startPoint)));
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
