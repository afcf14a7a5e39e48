// A client program written against the TypeScript SDK of the released contract: openapi-fetch over
// the types openapi-typescript (default options) generates from api/baseline/openapi-1.0.0.yaml.
// app/baseline_sdk_test.go type-checks it (tsc --strict) against the types generated from the
// baseline and against those generated from the current openapi.yaml (api/ts/src/schema.d.ts),
// then runs it against a live server at OBSVC_URL: a 1.x release must keep a program like this
// compiling and passing. It drives every operation openapi-fetch expresses, the OTLP route in its
// JSON mapping and the event stream of the tail included.
import createClient from "openapi-fetch";
import type { paths, components } from "./schema";

declare const process: { env: Record<string, string | undefined>; exitCode?: number };

type LogEntryInput = components["schemas"]["LogEntryInput"];

function check(ok: boolean, what: string): asserts ok {
  if (!ok) throw new Error(`baselinesdk (TypeScript): ${what}`);
}

async function main(): Promise<void> {
  const base = process.env["OBSVC_URL"];
  check(base !== undefined && base !== "", "OBSVC_URL must name a running server");
  const api = createClient<paths>({ baseUrl: base });

  const created = await api.POST("/projects", { body: { name: "baseline-ts", retention_days: 30 } });
  check(created.response.status === 201 && created.data !== undefined, `createProject: ${created.response.status}`);
  const id = created.data.id;
  check(created.response.headers.get("location") === `/projects/${id}`, "createProject: Location");

  const list = await api.GET("/projects");
  check(list.data?.some((p) => p.id === id) === true, "listProjects");

  const got = await api.GET("/projects/{id}", { params: { path: { id } } });
  check(got.data?.name === "baseline-ts" && got.data.retention_days === 30, "getProject");

  const renamed = await api.PUT("/projects/{id}", { params: { path: { id } }, body: { name: "baseline-ts-2" } });
  check(renamed.data?.name === "baseline-ts-2" && renamed.data.retention_days === null, "updateProject");

  const patched = await api.PATCH("/projects/{id}", {
    params: { path: { id } },
    body: { retention_days: null },
    headers: { "Content-Type": "application/merge-patch+json" },
  });
  check(patched.data?.retention_days === null && patched.data.name === "baseline-ts-2", "patchProject");

  const entries: LogEntryInput[] = [
    { project_id: id, message: "one", level: "error", user_id: "u1", time: 1000, attributes: { retry: true } },
    { project_id: id, message: "two", time: 2000, subject: "checkout" },
    { project_id: id, message: "three", time: 3000 },
  ];
  const logs = await api.POST("/logs", { body: entries, params: { header: { "Idempotency-Key": "baseline-ts-1" } } });
  check(logs.response.status === 201 && logs.data?.created === 3, `createLogs: ${logs.response.status}`);

  const page = await api.GET("/logs", { params: { query: { project_id: id, limit: 2 } } });
  check(page.data?.length === 2 && page.data[0]?.message === "one", "listLogs");
  check(/rel="next"/.test(page.response.headers.get("link") ?? ""), "listLogs: Link");

  const errors = await api.GET("/logs", { params: { query: { project_id: id, log_level: ["error"], order: "desc" } } });
  check(errors.data?.length === 1 && errors.data[0]?.user_id === "u1", "listLogs (log_level)");

  const bad = await api.GET("/logs", { params: { query: { project_id: id, start_time: 5, end_time: 1 } } });
  check(bad.response.status === 400 && bad.error?.errors?.[0]?.parameter === "start_time", "listLogs (start after end)");

  const stats = await api.GET("/logs/stats", {
    params: { query: { project_id: id, start_time: 0, end_time: 9999, step: 5000, by: "level" } },
  });
  check(stats.data?.total === 3 && stats.data.buckets.length === 2 && stats.data.series.length === 2, "logStats");

  const otlp = await api.POST("/v1/logs", {
    params: { header: { "X-Project-Id": id } },
    body: {
      resourceLogs: [
        { scopeLogs: [{ logRecords: [{ timeUnixNano: "4000000000", severityText: "WARN", body: { stringValue: "over otlp" } }] }] },
      ],
    },
  });
  check(otlp.response.status === 200, `exportOtlpLogs: ${otlp.response.status}`);
  const warned = await api.GET("/logs", { params: { query: { project_id: id, log_level: ["warn"] } } });
  check(warned.data?.length === 1 && warned.data[0]?.message === "over otlp", "listLogs (otlp)");

  // The tail replays the error entry from start_time on, as an event stream.
  const abort = new AbortController();
  const tail = await api.GET("/logs/tail", {
    params: { query: { project_id: id, log_level: ["error"], start_time: 0 } },
    parseAs: "stream",
    signal: abort.signal,
  });
  check(tail.response.status === 200 && tail.data != null, `tailLogs: ${tail.response.status}`);
  const reader = tail.data.getReader();
  const decoder = new TextDecoder();
  let events = "";
  while (!events.includes('"message":"one"')) {
    const { value, done } = await reader.read();
    check(!done, `tailLogs: the stream ended: ${events}`);
    events += decoder.decode(value, { stream: true });
  }
  abort.abort();

  const deleted = await api.DELETE("/logs", { params: { query: { project_id: id, end_time: 2000 } } });
  check(deleted.data?.deleted === 2, "deleteLogs");

  const gone = await api.DELETE("/projects/{id}", { params: { path: { id } } });
  check(gone.response.status === 204, `deleteProject: ${gone.response.status}`);
  const missing = await api.GET("/projects/{id}", { params: { path: { id } } });
  check(missing.response.status === 404 && missing.error?.status === 404, "getProject (deleted)");
  console.log("baselinesdk (TypeScript): every operation: ok");
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
