// Refresh openapi.json from a running service: npm run spec -- <base URL> (token from PICK_TOKEN, if it needs one).
// The client's types are generated from that file at build; its test compares it with the live service's.
import { writeFileSync } from "node:fs";

const base = (process.argv[2] ?? "http://127.0.0.1:8000").replace(/\/+$/, "");
const headers = process.env.PICK_TOKEN ? { Authorization: `Bearer ${process.env.PICK_TOKEN}` } : {};
const response = await fetch(`${base}/openapi.json`, { headers });
if (!response.ok) {
  console.error(`GET ${base}/openapi.json answered ${response.status}: ${await response.text()}`);
  process.exit(1);
}
writeFileSync(new URL("../openapi.json", import.meta.url), `${JSON.stringify(await response.json(), null, 2)}\n`);
console.log(`openapi.json written from ${base}`);
