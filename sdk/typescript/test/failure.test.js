// The SDK's error kinds agree with the service's derivation on the same
// table (analytics/testdata/errorkinds.json, also read by the Go test), and
// refusal messages lose the argument values they quote.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { errorKind, scrubValues, argsHash, thrownKind } = require("../src/failure.cjs");
const { canonicalJSON } = require("../src/index.cjs");

test("errorKind follows the service's table", () => {
  const cases = JSON.parse(readFileSync(new URL("../../../analytics/testdata/errorkinds.json", import.meta.url)));
  assert.ok(cases.length > 40);
  for (const c of cases) {
    assert.equal(errorKind(c.method, c.error_type, c.message), c.kind, `${c.sdk}: ${c.method} ${c.error_type} ${c.message}`);
  }
});

test("scrubValues keeps property and rule, drops values", () => {
  const go = 'validating "arguments": validating root: validating /properties/days: type: seven has type "string", want "integer"';
  assert.equal(
    scrubValues(go, { city: "Paris", days: "seven" }),
    'validating "arguments": validating root: validating /properties/days: type: <value> has type "string", want "integer"',
  );
  // Numbers are taken whole: 7 stays in "<=70", 99 goes.
  assert.equal(scrubValues("minimum: 99 is more than 70.000000 (<=70)", { days: 99, n: 7 }), "minimum: <value> is more than 70.000000 (<=70)");
  // Nested values, and values as JSON quotes them.
  assert.equal(scrubValues('enum: "a\\"b" not in ["x"] for [{"q":"deep"}]', { o: { l: ["a\"b", "deep"] } }), 'enum: "<value>" not in ["x"] for [{"q":"<value>"}]');
  assert.equal(scrubValues("Too big: expected number to be <=7 at days", { city: "Paris", days: 99 }), "Too big: expected number to be <=7 at days");
});

test("argsHash is keyed and canonical", () => {
  const a = argsHash({ b: 1, a: [1, { d: true, c: null }] }, canonicalJSON);
  assert.match(a, /^[0-9a-f]{32}$/);
  assert.equal(argsHash({ a: [1, { c: null, d: true }], b: 1 }, canonicalJSON), a);
  assert.notEqual(argsHash({ b: 2 }, canonicalJSON), a);
  assert.equal(argsHash(undefined, canonicalJSON), argsHash({}, canonicalJSON));
  // Another key, another hash: without the key a hash confirms no guess.
  assert.notEqual(argsHash({ b: 1 }, canonicalJSON, "k1"), argsHash({ b: 1 }, canonicalJSON, "k2"));
  assert.equal(argsHash({ b: 1 }, canonicalJSON, "k1"), argsHash({ b: 1 }, canonicalJSON, "k1"));
});

test("thrownKind: protocol errors are answers, the rest throws", () => {
  assert.equal(thrownKind(Object.assign(new Error("x"), { code: -32602 })), undefined);
  assert.equal(thrownKind(new TypeError("x")), "exception");
  assert.equal(thrownKind(Object.assign(new Error("x"), { name: "AbortError" })), "cancelled");
  assert.equal(thrownKind("a string"), "exception");
});
