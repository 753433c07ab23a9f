// Refresh openapi.json, the document the client's types are generated from (its test compares it
// with the live service's /openapi.json):
//   npm run spec                  from this checkout's service, made by its Python (PYTHON, default python3)
//   npm run spec -- <base URL>    from a running service (PICK_TOKEN, if it has a key)
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const target = new URL("../openapi.json", import.meta.url);
let document;
if (process.argv[2]) {
  const base = process.argv[2].replace(/\/+$/, "");
  const headers = process.env.PICK_TOKEN ? { Authorization: `Bearer ${process.env.PICK_TOKEN}` } : {};
  const response = await fetch(`${base}/openapi.json`, { headers });
  if (!response.ok) {
    console.error(`GET ${base}/openapi.json answered ${response.status}: ${await response.text()}`);
    process.exit(1);
  }
  document = await response.json();
} else {
  // The document a service with an API key serves (a key adds the security scheme), without starting one.
  const root = fileURLToPath(new URL("../../..", import.meta.url));
  const code = "import json, tempfile, os\n"
    + "os.environ.update(PICK_DATA_DIR=tempfile.mkdtemp(), PICK_WARM_UP='false', PICK_API_KEY='spec')\n"
    + "from service.app import create_app\n"
    + "print(json.dumps(create_app().openapi()))\n";
  const text = execFileSync(process.env.PYTHON ?? "python3", ["-c", code], {
    cwd: root, env: { ...process.env, PYTHONPATH: root }, maxBuffer: 1 << 28,
  });
  document = JSON.parse(text.toString());
}
writeFileSync(target, `${JSON.stringify(document, null, 2)}\n`);
console.log(`openapi.json written from ${process.argv[2] ?? "this checkout's service"}`);
