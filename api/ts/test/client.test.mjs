// Exercises every REST operation and MakeHat in JSON and protobuf against a live server whose
// base URL is OBSVC_URL (the Go test app/ts_test.go starts one and runs this).
import { test } from "node:test";
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import { createClient } from "../src/rest.mjs";
import twirpTransport from "@protobuf-ts/twirp-transport";
import haberdasher from "../gen/haberdasher/service.client.js";

const base = process.env.OBSVC_URL;
assert.ok(base, "OBSVC_URL must name a running server");
const api = createClient(base);

test("every REST operation", async () => {
  const created = await api.POST("/projects", { body: { name: "ts" } });
  assert.equal(created.response.status, 201);
  assert.equal(created.response.headers.get("location"), `/projects/${created.data.id}`);
  const id = created.data.id;

  const list = await api.GET("/projects");
  assert.equal(list.response.status, 200);
  assert.ok(list.data.some((p) => p.id === id));

  const got = await api.GET("/projects/{id}", { params: { path: { id } } });
  assert.deepEqual(got.data, created.data);

  const renamed = await api.PUT("/projects/{id}", { params: { path: { id } }, body: { name: "ts-2" } });
  assert.equal(renamed.data.name, "ts-2");
  assert.ok(new Date(renamed.data.updated_at) > new Date(created.data.updated_at));

  const patched = await api.PATCH("/projects/{id}", {
    params: { path: { id } },
    body: { retention_days: 7 },
    headers: { "Content-Type": "application/merge-patch+json" },
  });
  assert.equal(patched.response.status, 200);
  assert.equal(patched.data.retention_days, 7);
  assert.equal(patched.data.name, "ts-2");
  const forever = await api.PATCH("/projects/{id}", {
    params: { path: { id } },
    body: { retention_days: null },
    headers: { "Content-Type": "application/merge-patch+json" },
  });
  assert.equal(forever.data.retention_days, null); // the entries below are from 1970

  const logs = await api.POST("/logs", {
    body: [
      { project_id: id, message: "one", level: "error", user_id: "u1", time: 1000 },
      { project_id: id, message: "two", time: 2000 },
      { project_id: id, message: "three", time: 3000 },
    ],
  });
  assert.equal(logs.response.status, 201);
  assert.deepEqual(logs.data, { created: 3 });

  const page = await api.GET("/logs", { params: { query: { project_id: id, limit: 2 } } });
  assert.equal(page.response.status, 200);
  assert.deepEqual(page.data.map((e) => e.message), ["one", "two"]);
  const next = page.response.headers.get("link");
  assert.match(next, /^<\/logs\?.*cursor=.*>; rel="next"$/);
  // A relative reference (RFC 8288): resolved against the URL of the request it came with.
  const nextURL = new URL(next.slice(1, next.indexOf(">")), page.response.url);
  const rest = await fetch(nextURL);
  assert.deepEqual((await rest.json()).map((e) => e.message), ["three"]);
  // Or through the typed client: the cursor is the only parameter the page adds.
  const again = await api.GET("/logs", {
    params: { query: { project_id: id, limit: 2, cursor: nextURL.searchParams.get("cursor") } },
  });
  assert.deepEqual(again.data.map((e) => e.message), ["three"]);

  const errors = await api.GET("/logs", { params: { query: { project_id: id, log_level: ["error"], order: "desc" } } });
  assert.deepEqual(errors.data.map((e) => e.user_id), ["u1"]);

  const stats = await api.GET("/logs/stats", {
    params: { query: { project_id: id, start_time: 0, end_time: 5999, step: 3000, by: "level" } },
  });
  assert.equal(stats.response.status, 200);
  assert.deepEqual(stats.data.buckets, [0, 3000]);
  assert.deepEqual(
    stats.data.series.map((s) => [s.value, s.counts]),
    [["error", [1, 0]], ["info", [1, 1]]],
  );

  // The most common levels in the same range, and the attribute keys in use.
  const facets = await api.GET("/logs/facets", {
    params: { query: { project_id: id, start_time: 0, end_time: 5999, field: ["level"], limit: 1 } },
  });
  assert.equal(facets.response.status, 200);
  assert.deepEqual(facets.data.facets, [{ field: "level", values: [{ value: "info", count: 2 }], other: 1, missing: 0 }]);
  const fields = await api.GET("/logs/fields", { params: { query: { project_id: id, start_time: 0, end_time: 5999 } } });
  assert.equal(fields.response.status, 200);
  assert.ok(Array.isArray(fields.data));

  // The entries around the first one, and everything as a CSV download.
  const [first] = (await api.GET("/logs", { params: { query: { project_id: id, limit: 1 } } })).data;
  const around = await api.GET("/logs/context", { params: { query: { project_id: id, id: first.id, before: 0, after: 1 } } });
  assert.equal(around.response.status, 200);
  assert.deepEqual([around.data.before.length, around.data.entry.id, around.data.after.length], [0, first.id, 1]);
  const csv = await api.GET("/logs/export", { params: { query: { project_id: id, format: "csv" } }, parseAs: "text" });
  assert.equal(csv.response.status, 200);
  assert.equal(csv.response.headers.get("content-type"), "text/csv; charset=utf-8");
  assert.equal(csv.data.split("\n")[0], "time,level,subject,user_id,trace_id,span_id,message,attributes");

  // OTLP/HTTP in its JSON mapping, through the same typed client.
  const otlp = await api.POST("/v1/logs", {
    params: { header: { "X-Project-Id": id } },
    body: { resourceLogs: [{ scopeLogs: [{ logRecords: [{ timeUnixNano: "4000000000", body: { stringValue: "otlp" } }] }] }] },
  });
  assert.equal(otlp.response.status, 200);
  const viaOtlp = await api.GET("/logs", { params: { query: { project_id: id, q: "otlp" } } });
  assert.deepEqual(viaOtlp.data.map((e) => e.time), [4000]);

  // The tail, read as a stream: the replay from start_time holds the error entry.
  const abort = new AbortController();
  const tail = await api.GET("/logs/tail", {
    params: { query: { project_id: id, log_level: ["error"], start_time: 0 } },
    parseAs: "stream",
    signal: abort.signal,
  });
  assert.equal(tail.response.headers.get("content-type"), "text/event-stream");
  const reader = tail.data.getReader();
  let events = "";
  while (!events.includes('"message":"one"')) {
    const { value, done } = await reader.read();
    assert.ok(!done, `the tail ended: ${events}`);
    events += new TextDecoder().decode(value);
  }
  abort.abort();

  const deleted = await api.DELETE("/logs", { params: { query: { project_id: id, end_time: 2000 } } });
  assert.deepEqual(deleted.data, { deleted: 2 });

  const bad = await api.GET("/logs", { params: { query: { project_id: id, start_time: 5, end_time: 1 } } });
  assert.equal(bad.response.status, 400);
  assert.equal(bad.response.headers.get("content-type"), "application/problem+json");
  assert.deepEqual(bad.error.errors.map((e) => e.parameter), ["start_time"]);

  // Saved searches: save, list, read, patch, a taken name, delete.
  const search = { project_id: id, name: "errors", query: "level:error", range_seconds: 3600 };
  const saved = await api.POST("/searches", { body: search });
  assert.equal(saved.response.status, 201);
  assert.equal(saved.response.headers.get("location"), `/searches/${saved.data.id}`);
  const sid = saved.data.id;
  const searches = await api.GET("/searches", { params: { query: { project_id: id } } });
  assert.deepEqual(searches.data, [saved.data]);
  const gotSearch = await api.GET("/searches/{id}", { params: { path: { id: sid } } });
  assert.deepEqual(gotSearch.data, saved.data);
  const widened = await api.PATCH("/searches/{id}", {
    params: { path: { id: sid } },
    body: { range_seconds: 86400 },
    headers: { "Content-Type": "application/merge-patch+json" },
  });
  assert.equal(widened.response.status, 200);
  assert.equal(widened.data.range_seconds, 86400);
  assert.equal(widened.data.name, "errors");
  const taken = await api.POST("/searches", { body: search });
  assert.equal(taken.response.status, 409);
  assert.deepEqual(taken.error.errors.map((e) => e.pointer), ["/name"]);
  const unsaved = await api.DELETE("/searches/{id}", { params: { path: { id: sid } } });
  assert.equal(unsaved.response.status, 204);

  // Alert rules: create (no secret returned), list, read, patch, history, the test button (the
  // target, on the discard port, does not answer), a refused target, delete. The server allows
  // targets on 127.0.0.1.
  const rule = {
    project_id: id, name: "errors", query: "level:error", window_seconds: 300, interval_seconds: 60,
    condition: { op: ">", threshold: 10 },
    targets: [{ type: "webhook", url: "http://127.0.0.1:9/hook", bearer_token: "secret" }],
  };
  const made = await api.POST("/alerts", { body: rule });
  assert.equal(made.response.status, 201);
  assert.equal(made.response.headers.get("location"), `/alerts/${made.data.id}`);
  assert.equal(made.data.state, "ok");
  assert.deepEqual(made.data.targets, [{ type: "webhook", url: "http://127.0.0.1:9/hook", bearer_token_set: true }]);
  const aid = made.data.id;
  const rules = await api.GET("/alerts", { params: { query: { project_id: id } } });
  assert.deepEqual(rules.data.map((r) => r.id), [aid]);
  const gotRule = await api.GET("/alerts/{id}", { params: { path: { id: aid } } });
  assert.equal(gotRule.data.query, "level:error");
  const silenced = await api.PATCH("/alerts/{id}", {
    params: { path: { id: aid } },
    body: { silenced_until: 1 },
    headers: { "Content-Type": "application/merge-patch+json" },
  });
  assert.equal(silenced.data.silenced_until, 1);
  const history = await api.GET("/alerts/{id}/history", { params: { path: { id: aid } } });
  assert.equal(history.response.status, 200);
  const tested = await api.POST("/alerts/{id}/test", { params: { path: { id: aid } } });
  assert.equal(tested.data.length, 1);
  assert.equal(tested.data[0].ok, false);
  const refused = await api.POST("/alerts", { body: { ...rule, targets: [{ type: "webhook", url: "http://169.254.169.254/" }] } });
  assert.equal(refused.response.status, 400);
  assert.deepEqual(refused.error.errors.map((e) => e.pointer), ["/targets/0/url"]);
  const unmade = await api.DELETE("/alerts/{id}", { params: { path: { id: aid } } });
  assert.equal(unmade.response.status, 204);

  const gone = await api.DELETE("/projects/{id}", { params: { path: { id } } });
  assert.equal(gone.response.status, 204);
  const missing = await api.GET("/projects/{id}", { params: { path: { id } } });
  assert.equal(missing.response.status, 404);
  assert.equal(missing.error.status, 404);
});

for (const useJson of [true, false]) {
  test(`MakeHat over Twirp in ${useJson ? "JSON" : "protobuf"}`, async () => {
    const transport = new twirpTransport.TwirpFetchTransport({ baseUrl: `${base}/twirp`, sendJson: useJson });
    const client = new haberdasher.HaberdasherClient(transport);
    const { response } = await client.makeHat({ inches: 12 });
    assert.equal(response.inches, 12);
    assert.notEqual(response.color, "invisible");
    assert.match(response.name, /^[a-z]+$/);
    await assert.rejects(client.makeHat({ inches: 0 }).response, (err) => {
      assert.equal(err.code, "invalid_argument");
      assert.equal(err.meta.argument, "inches");
      return true;
    });
  });
}

test("POST /logs as NDJSON and in gzip", async () => {
  const { data: project } = await api.POST("/projects", { body: { name: "ts-ndjson" } });
  const now = Date.now();
  // One entry a line: the body is typed as the entries, the serializer writes the lines.
  const ndjson = (entries) => entries.map((e) => JSON.stringify(e)).join("\n") + "\n";
  const asNDJSON = { headers: { "Content-Type": "application/x-ndjson" }, bodySerializer: ndjson };
  const lines = await api.POST("/logs", {
    body: [
      { project_id: project.id, message: "nd one", time: now },
      { project_id: project.id, message: "nd two", time: now + 1 },
    ],
    ...asNDJSON,
  });
  assert.equal(lines.response.status, 201);
  assert.deepEqual(lines.data, { created: 2 });

  const gz = await api.POST("/logs", {
    params: { header: { "Content-Encoding": "gzip" } },
    body: [{ project_id: project.id, message: "nd three", time: now + 2 }],
    headers: { "Content-Type": "application/x-ndjson" },
    bodySerializer: (entries) => gzipSync(ndjson(entries)),
  });
  assert.equal(gz.response.status, 201);
  assert.deepEqual(gz.data, { created: 1 });

  // The same pointers as the array form; the detail names the line.
  const bad = await api.POST("/logs", {
    body: [
      { project_id: project.id, message: "fine", time: now },
      { project_id: project.id, message: "late", time: "soon" },
    ],
    ...asNDJSON,
  });
  assert.equal(bad.response.status, 400);
  assert.deepEqual(bad.error.errors.map((e) => e.pointer), ["/1/time"]);
  assert.match(bad.error.errors[0].detail, /^line 2: /);

  const listed = await api.GET("/logs", { params: { query: { project_id: project.id } } });
  assert.deepEqual(listed.data.map((e) => e.message), ["nd one", "nd two", "nd three"]);
});
