/** The client's types are the live service's: its OpenAPI document, generated the way the build generates them. */

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { BASE_URL, TOKEN } from "./support.js";

const AUTH = { headers: { Authorization: `Bearer ${TOKEN}` } };

/** The package's root (npm runs the tests there). */
const ROOT = process.cwd();

test("the types built from openapi.json are those of the live service's /openapi.json", async () => {
  const response = await fetch(`${BASE_URL}/openapi.json`, AUTH);
  assert.equal(response.status, 200);
  const live = await response.text();
  const checkedIn = JSON.parse(readFileSync(join(ROOT, "openapi.json"), "utf8")) as unknown;
  assert.deepEqual(JSON.parse(live), checkedIn, "openapi.json is the service's document: refresh it with npm run spec");

  const directory = mkdtempSync(join(tmpdir(), "bvh-pick-spec-"));
  writeFileSync(join(directory, "live.json"), live);
  // The build's own command (package.json's generate script), on the live document.
  const script = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: { generate: string } })
    .scripts.generate;
  const argv = script.split(" ").slice(1).map((word) => (word === "openapi.json" ? join(directory, "live.json")
    : word === "src/generated/api.ts" ? join(directory, "api.ts") : word));
  execFileSync(process.execPath, [join(ROOT, "node_modules", "openapi-typescript", "bin", "cli.js"), ...argv],
               { stdio: "pipe" });
  assert.equal(readFileSync(join(directory, "api.ts"), "utf8"), readFileSync(join(ROOT, "src", "generated", "api.ts"), "utf8"));
});

test("the package's version is the API's", async () => {
  const spec = (await (await fetch(`${BASE_URL}/openapi.json`, AUTH)).json()) as { info: { version: string } };
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
  assert.equal(pkg.version, spec.info.version);
});
