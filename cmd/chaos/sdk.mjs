// The chaos harness's TypeScript SDK client (cmd/chaos, docs/chaos.md):
// the SDK's Sender, retrying, sends items to two instances in turn (its
// fetch alternates between them, as a load balancer would) and this script
// reports on stdout, one JSON line each, every answer's status and the ids
// of every batch answered 202.
//
//   node sdk.mjs ENDPOINT_A,ENDPOINT_B KEY SECONDS
import { gunzipSync } from "node:zlib";
import { Sender } from "../../sdk/typescript/src/index.js";

const [endpoints, key, seconds] = [process.argv[2].split(","), process.argv[3], Number(process.argv[4])];
let turn = 0;
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");

async function balancedFetch(url, init) {
  const base = endpoints[turn++ % endpoints.length];
  const res = await fetch(url.replace(/^https?:\/\/[^/]+/, base), init);
  out({ status: res.status });
  if (res.status === 202) {
    const raw = init.headers["Content-Encoding"] === "gzip" ? gunzipSync(init.body) : init.body;
    out({ acked: JSON.parse(raw.toString()).items.map((it) => it.id) });
  }
  return res;
}

const sender = new Sender({
  endpoint: endpoints[0], key, fetch: balancedFetch, flushIntervalMs: 250, batchSize: 40,
  maxRetries: 1000, retryBaseDelayMs: 100, maxRetryDelayMs: 2000, timeoutMs: 10000, maxQueue: 100000,
});
const end = Date.now() + seconds * 1000;
let n = 0;
while (Date.now() < end) {
  const now = new Date();
  sender.add({ id: `ts-${n++}`, timestamp: now.toISOString(), session_id: `ts-s${n % 7}`, method: "tools/call",
    name: `ts-tool-${n % 3}`, status: "ok", duration_ms: n % 250 });
  await new Promise((r) => setTimeout(r, 20));
}
await sender.close();
out({ done: n, stats: sender.stats });
