/**
 * The client for Node, whose version 20 has no global WebSocket: {@link LiveScene} opens the live
 * channel with the `ws` package, which also sends the token on the upgrade (`Authorization: Bearer`).
 */

import WebSocket from "ws";

import { LiveScene as BaseLiveScene, type LiveOptions, type LiveSocket, type OpenSocket } from "./live.js";

export * from "./index.js";

/** A WebSocket of the `ws` package, with the token on the upgrade. */
export const wsSocket: OpenSocket = (url, token) => {
  const headers: Record<string, string> = token === undefined ? {} : { Authorization: `Bearer ${token}` };
  return { socket: new WebSocket(url, { headers }) as unknown as LiveSocket, authMessage: false };
};

/** {@link BaseLiveScene} over `ws` unless `openSocket` says otherwise. */
export class LiveScene extends BaseLiveScene {
  constructor(options: LiveOptions) {
    super({ openSocket: wsSocket, ...options });
  }
}
