/** The live channel's client against the live service: the table, picks, edits, batches, reconnect, resync. */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";

import WebSocket from "ws";

import { LiveClosed, LiveScene, type LiveSocket, type OpenSocket, type Schemas } from "../src/node.js";
import { BASE_URL, client, INLINE_OBJECTS, objectsById, SQUARE, squares, TOKEN, translation } from "./support.js";

/** ws sockets, kept so that a test can drop or stall them. */
function keptSockets(sockets: WebSocket[], authMessage = false, options: WebSocket.ClientOptions = {}): OpenSocket {
  return (url, token) => {
    const headers: Record<string, string> = authMessage || token === undefined ? {} : { Authorization: `Bearer ${token}` };
    const socket = new WebSocket(url, { ...options, headers });
    sockets.push(socket);
    return { socket: socket as unknown as LiveSocket, authMessage };
  };
}

/**
 * Edits of `eventBytes` each that overflow a client that stopped reading: enough to fill the most
 * the server's socket may buffer (tcp_wmem's maximum) and the stalled receiver's window (it does
 * not grow while nothing is read: tcp_rmem's default), then 12 more to pile up on the server.
 */
function stallSteps(eventBytes: number): number {
  const most = (path: string, field: number, fallback: number) => {
    try {
      return Number(readFileSync(path, "utf8").trim().split(/\s+/)[field]);
    } catch {
      return fallback;
    }
  };
  const buffered = most("/proc/sys/net/ipv4/tcp_wmem", 2, 4 << 20) + most("/proc/sys/net/ipv4/tcp_rmem", 1, 1 << 17);
  return Math.ceil(buffered / eventBytes) + 12;
}

/**
 * ws sockets whose first edit answer is lost: the connection drops as it arrives (the edit was
 * applied, the client never heard), so the client sends the edit again after it reconnects.
 */
function firstEditAnswerLost(sockets: WebSocket[]): OpenSocket {
  let lost = false;
  return (url, token) => {
    const socket = new WebSocket(url, { headers: { Authorization: `Bearer ${token}` } });
    sockets.push(socket);
    const wrapped: LiveSocket = {
      get binaryType() { return socket.binaryType; },
      set binaryType(kind: string) { socket.binaryType = kind as WebSocket["binaryType"]; },
      send: (data) => socket.send(data),
      close: (code, reason) => socket.close(code, reason),
      addEventListener: (type: string, listener: (event: never) => void) => {
        if (type !== "message") {
          socket.addEventListener(type as "close", listener as () => void);
          return;
        }
        socket.addEventListener("message", (event) => {
          if (!lost && typeof event.data === "string" && event.data.startsWith('{"type":"edit"')) {
            lost = true;
            socket.terminate();
            return;
          }
          (listener as (event: WebSocket.MessageEvent) => void)(event);
        });
      },
    };
    return { socket: wrapped, authMessage: false };
  };
}

function sameTable(live: LiveScene, expected: Map<number, Schemas["ObjectOut"]>): void {
  assert.deepEqual(new Map([...live.objects].sort(([a], [b]) => a - b)), expected);
}

describe("live channel", () => {
  let scene: Schemas["SceneOut"];
  const opened: LiveScene[] = [];
  const open = (options: Partial<ConstructorParameters<typeof LiveScene>[0]> = {}) => {
    const live = new LiveScene({ baseUrl: BASE_URL, sceneId: scene.id, token: TOKEN, reconnectMs: 50, ...options });
    opened.push(live);
    return live;
  };

  before(async () => {
    scene = await squares("live squares");
  });
  after(() => {
    for (const live of opened) live.close();
  });

  test("the hello's first objects and the pages past them make the whole table", async () => {
    const live = open();
    let hello = 0;
    live.on("table", ({ reason }) => { if (reason === "hello") hello = live.objects.size; });
    await live.ready;
    assert.equal(hello, INLINE_OBJECTS, "the hello lists PICK_INLINE_OBJECTS objects");
    await live.until((it) => it.complete);
    sameTable(live, await objectsById(scene.id));
    assert.equal(live.version, (await client.listObjects(scene.id)).version);
  });

  test("a pick over the channel answers what POST /pick answers", async () => {
    const live = open();
    await live.ready;
    const request = { origin: [6.75, 0.25, 5], direction: [0, 0, -1] };
    assert.deepEqual(await live.pick(request), await client.pick(scene.id, request));
    const refused = live.pick({ origin: [0, 0, 0], direction: [0, 0, 0] });
    await assert.rejects(refused, (error: unknown) => error instanceof Error && "status" in error && error.status === 422);
  });

  test("an edit on one channel comes to another as an event at the edit's version", async () => {
    const editor = open();
    const watcher = open();
    await Promise.all([editor.ready, watcher.ready]);
    const events: Schemas["EventMessage"][] = [];
    watcher.on("event", (event) => events.push(event));
    const result = await editor.edit([{ id: 4, transform: translation(8, 5, 0) }]);
    assert.deepEqual(editor.objects.get(4)?.transform, translation(8, 5, 0), "the editor's table takes its own answer");
    await watcher.until((it) => (it.version ?? 0) >= result.version);
    assert.deepEqual(watcher.objects.get(4)?.transform, translation(8, 5, 0));
    assert.equal(events.at(-1)?.event, "moved");
    assert.equal(events.at(-1)?.version, result.version);
  });

  test("binary batch frames answer what pick/batch.bin answers, in the layout set by batch_options", async () => {
    const live = open();
    await live.ready;
    const rays = new Float32Array([0.75, 0.25, 5, 0, 0, -1, 2.25, 0.75, 5, 0, 0, -1, -3, 0, 5, 0, 0, -1]);
    assert.deepEqual(await live.pickBatch(rays), await client.pickBatch(scene.id, rays));
    const options = await live.batchOptions({ records: "primitive", tmax: 10 });
    assert.equal(options.records, "primitive");
    assert.deepEqual(await live.pickBatch(rays), await client.pickBatchPrimitives(scene.id, rays, { tmax: 10 }));
  });

  test("a dropped channel reopens, takes the edits it missed, and answers what was asked while it was down", async () => {
    const sockets: WebSocket[] = [];
    const live = open({ openSocket: keptSockets(sockets) });
    await live.ready;
    const closes: number[] = [];
    live.on("close", ({ code }) => closes.push(code));
    sockets[0]!.terminate();
    await live.until((it) => !it.open);
    const missed = await client.updateObjects(scene.id, [{ id: 7, transform: translation(14, 9, 0) }]);
    const answer = live.pick({ origin: [14.75, 9.25, 5], direction: [0, 0, -1] });
    await live.until((it) => it.connects === 2 && it.complete);
    assert.equal(closes.length, 1);
    assert.equal(sockets.length, 2);
    assert.deepEqual(live.objects.get(7)?.transform, translation(14, 9, 0));
    assert.ok((live.version ?? 0) >= missed.version);
    const hit = await answer;
    assert.ok("hit" in hit && hit.hit && hit.object?.id === 7, "asked while down, answered after the reconnect");
    sameTable(live, await objectsById(scene.id));
  });

  test("an edit whose answer was lost is sent again after the reconnect with its id, and applied once", async () => {
    const sockets: WebSocket[] = [];
    const live = open({ openSocket: firstEditAnswerLost(sockets) });
    await live.ready;
    const before = (await client.listObjects(scene.id)).version;
    const result = await live.edit([{ id: 9, transform: translation(18, 3, 0) }]);
    assert.equal(sockets.length, 2, "the answer was lost with the first connection");
    assert.equal(live.connects, 2);
    assert.equal(result.version, before + 1, "the first answer, replayed");
    assert.equal((await client.listObjects(scene.id)).version, before + 1, "applied once");
    assert.deepEqual((await client.getObject(scene.id, 9)).transform, translation(18, 3, 0));
  });

  test("a client stalled past PICK_LIVE_QUEUE is sent a resync and ends with the scene's table", async () => {
    // Every edit moves all 1,500 objects: the stalled socket's buffers fill, then more than
    // PICK_LIVE_QUEUE (8) events pile up for it on the server.
    const count = 1500;
    const many = await client.createScene({ name: "resync", meshes: Array.from({ length: count }, (_, i) => ({
      ...SQUARE, name: `square ${i}`, transform: translation(2 * i, 0, 0),
    })) });
    const eventBytes = JSON.stringify([...(await objectsById(many.id)).values()]).length;
    const sockets: WebSocket[] = [];
    const stalled = new LiveScene({ baseUrl: BASE_URL, sceneId: many.id, token: TOKEN,
                                    openSocket: keptSockets(sockets, false, { perMessageDeflate: false }) });
    opened.push(stalled);
    await stalled.ready;
    sockets[0]!.pause();
    const ids = Array.from({ length: count }, (_, i) => i);
    for (let step = 1; step <= stallSteps(eventBytes); step++) {
      const rows = new Float32Array(ids.flatMap((i) => [1, 0, 0, 2 * i, 0, 1, 0, step, 0, 0, 1, 0]));
      await client.moveObjects(many.id, ids, rows);
    }
    const final = await objectsById(many.id);
    const version = (await client.listObjects(many.id)).version;
    sockets[0]!.resume();
    await stalled.until((it) => it.resyncs > 0 && it.complete && it.version === version, 30_000);
    assert.equal(stalled.resyncs, 1);
    assert.equal(stalled.connects, 1, "resynced on the same connection");
    sameTable(stalled, final);
  });

  test("a token in the first message (as browsers send it) opens the channel; a wrong one is refused with 1008", async () => {
    const browserLike = open({ openSocket: keptSockets([], true) });
    await browserLike.ready;
    assert.ok(browserLike.open);
    const stranger = open({ token: "not the key", openSocket: keptSockets([], true) });
    await assert.rejects(stranger.ready, (error: unknown) => error instanceof LiveClosed && error.code === 1008);
    const unknown = new LiveScene({ baseUrl: BASE_URL, sceneId: "no-such-scene", token: TOKEN });
    await assert.rejects(unknown.ready, (error: unknown) => error instanceof LiveClosed && error.code === 4404);
  });

  test("close() refuses what waits and does not reopen", async () => {
    const live = open();
    await live.ready;
    const waiting = live.pick({ origin: [0.75, 0.25, 5], direction: [0, 0, -1] });
    live.close();
    await assert.rejects(waiting, LiveClosed);
    assert.equal(live.open, false);
  });
});

