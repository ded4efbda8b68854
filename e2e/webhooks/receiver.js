// A signed-webhook receiver for the delivery tests: an HTTPS server that
// verifies every POST with standardwebhooks (the Standard Webhooks
// reference implementation) against the secret in --secret-file (read at
// each request, so a test can rotate it) and records the outcome;
// GET /results answers the records as JSON.
//
//   node receiver.js --port N --cert cert.pem --key key.pem --secret-file secret.txt
"use strict";
const fs = require("fs");
const https = require("https");
const { Webhook } = require("standardwebhooks");

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];

const results = [];
const server = https.createServer({ cert: fs.readFileSync(args.cert), key: fs.readFileSync(args.key) }, (req, res) => {
  if (req.method === "GET" && req.url === "/results") {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify(results));
    return;
  }
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    const secret = fs.readFileSync(args["secret-file"], "utf8").trim();
    const rec = { path: req.url, id: req.headers["webhook-id"], signature: req.headers["webhook-signature"] };
    try {
      const payload = new Webhook(secret).verify(body, req.headers);
      rec.verified = true;
      rec.payload = payload;
      res.writeHead(200, { "Content-Type": "text/plain" });
      res.end("ok");
    } catch (e) {
      rec.verified = false;
      rec.error = String(e && e.message);
      res.writeHead(401, { "Content-Type": "text/plain" });
      res.end("bad signature");
    }
    results.push(rec);
  });
});
server.listen(Number(args.port), "127.0.0.1", () => console.log("listening"));
