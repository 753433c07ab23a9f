/**
 * `@bvh-pick/client`: the official TypeScript client of bvh-pick, for browsers and Node
 * (in Node 20, import `@bvh-pick/client/node` for the live channel: it uses the `ws` package).
 */

export * from "./binary.js";
export * from "./http.js";
export * from "./live.js";
