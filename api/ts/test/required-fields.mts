// Sends every REST operation with only the fields the contract requires, through the openapi-fetch
// client typed by src/schema.d.ts as openapi-typescript generates it at its default options. It
// must type-check (tsc --strict, see tsconfig.json): a request-side `default` in openapi.yaml makes
// that generator require the field, and a client could no longer leave it out. app/ts_test.go
// type-checks it, compiles it and runs it against a live server whose base URL is OBSVC_URL.
import { createClient, type components } from "../src/rest.mjs";

declare const process: { env: Record<string, string | undefined>; exitCode?: number };

type LogEntryInput = components["schemas"]["LogEntryInput"];

function check(ok: boolean, what: string): asserts ok {
  if (!ok) throw new Error(`required-fields: ${what}`);
}

async function main(): Promise<void> {
  const base = process.env["OBSVC_URL"];
  check(base !== undefined && base !== "", "OBSVC_URL must name a running server");
  const api = createClient(base);

  const created = await api.POST("/projects", { body: { name: "required-only" } });
  check(created.response.status === 201 && created.data !== undefined, `createProject: ${created.response.status}`);
  const id = created.data.id;

  const list = await api.GET("/projects");
  check(list.data?.some((p) => p.id === id) === true, "listProjects");

  const got = await api.GET("/projects/{id}", { params: { path: { id } } });
  check(got.data?.name === "required-only", "getProject");

  const renamed = await api.PUT("/projects/{id}", { params: { path: { id } }, body: { name: "renamed" } });
  check(renamed.data?.name === "renamed", "updateProject");

  // Only project_id and message: no level, time, subject or user_id, and no Idempotency-Key.
  const entry: LogEntryInput = { project_id: id, message: "only what is required" };
  const logs = await api.POST("/logs", { body: [entry] });
  check(logs.response.status === 201 && logs.data?.created === 1, `createLogs: ${logs.response.status}`);

  // Only project_id: no order, limit, cursor or filters; the server applies its defaults.
  const page = await api.GET("/logs", { params: { query: { project_id: id } } });
  check(page.response.status === 200 && page.data !== undefined, `listLogs: ${page.response.status}`);
  const [stored] = page.data;
  check(page.data.length === 1 && stored !== undefined, "listLogs: one entry");
  check(stored.level === "info", `the default level is info, got ${stored.level}`);
  check(stored.time > 0 && stored.subject === undefined && stored.user_id === undefined, "defaults of time, subject, user_id");

  // Only project_id and id: each side takes its default.
  const around = await api.GET("/logs/context", { params: { query: { project_id: id, id: stored.id } } });
  check(around.data?.entry.id === stored.id && around.data.before.length === 0 && around.data.after.length === 0, "logContext");
  // Only project_id: NDJSON, every entry.
  const exported = await api.GET("/logs/export", { params: { query: { project_id: id } }, parseAs: "text" });
  check(exported.response.status === 200 && exported.data?.includes("only what is required") === true, "exportLogs");

  const deleted = await api.DELETE("/logs", { params: { query: { project_id: id } } });
  check(deleted.data?.deleted === 1, "deleteLogs");

  // Every member of a saved search is required; a patch requires none.
  const saved = await api.POST("/searches", { body: { project_id: id, name: "required-only", query: "", range_seconds: 60 } });
  check(saved.response.status === 201 && saved.data !== undefined, `createSearch: ${saved.response.status}`);
  const sid = saved.data.id;
  const searches = await api.GET("/searches", { params: { query: { project_id: id } } });
  check(searches.data?.length === 1, "listSearches");
  const search = await api.GET("/searches/{id}", { params: { path: { id: sid } } });
  check(search.data?.name === "required-only", "getSearch");
  const patchedSearch = await api.PATCH("/searches/{id}", {
    params: { path: { id: sid } },
    body: {},
    headers: { "Content-Type": "application/merge-patch+json" },
  });
  check(patchedSearch.data?.range_seconds === 60, `patchSearch: ${patchedSearch.response.status}`);
  const unsaved = await api.DELETE("/searches/{id}", { params: { path: { id: sid } } });
  check(unsaved.response.status === 204, `deleteSearch: ${unsaved.response.status}`);

  // A rule with the members its schema requires, and the query the service requires of a rule
  // that names no saved search (the schema cannot say "one of two"); a patch requires none.
  const made = await api.POST("/alerts", {
    body: {
      project_id: id, name: "required-only", query: "", window_seconds: 60, interval_seconds: 10,
      condition: { op: "==", threshold: 0 }, targets: [{ type: "webhook", url: "http://127.0.0.1:9/" }],
    },
  });
  check(made.response.status === 201 && made.data !== undefined, `createAlert: ${made.response.status}`);
  const aid = made.data.id;
  const rules = await api.GET("/alerts", { params: { query: { project_id: id } } });
  check(rules.data?.length === 1, "listAlerts");
  const rule = await api.GET("/alerts/{id}", { params: { path: { id: aid } } });
  check(rule.data?.for_seconds === 0 && rule.data.silenced_until === 0, "getAlert: the defaults of for_seconds and silenced_until");
  const patchedRule = await api.PATCH("/alerts/{id}", {
    params: { path: { id: aid } },
    body: {},
    headers: { "Content-Type": "application/merge-patch+json" },
  });
  check(patchedRule.data?.name === "required-only", `patchAlert: ${patchedRule.response.status}`);
  const history = await api.GET("/alerts/{id}/history", { params: { path: { id: aid } } });
  check(history.response.status === 200, "getAlertHistory");
  const tested = await api.POST("/alerts/{id}/test", { params: { path: { id: aid } } });
  check(tested.data?.length === 1, `testAlert: ${tested.response.status}`);
  const unmade = await api.DELETE("/alerts/{id}", { params: { path: { id: aid } } });
  check(unmade.response.status === 204, `deleteAlert: ${unmade.response.status}`);

  const gone = await api.DELETE("/projects/{id}", { params: { path: { id } } });
  check(gone.response.status === 204, `deleteProject: ${gone.response.status}`);
  console.log("required-fields: every operation with only its required fields: ok");
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
