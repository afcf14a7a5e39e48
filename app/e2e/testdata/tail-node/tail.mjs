// Follows GET /logs/tail with the npm eventsource package, the WHATWG EventSource for node, as a
// client of the service would: its fetch option adds the API key (EventSource itself cannot send
// headers), and the package reconnects by itself with Last-Event-ID whenever the stream breaks.
//
// Environment: TAIL_URL (the tail to follow), OBSVC_KEY (the API key), END_MESSAGE (the message of
// the last entry: the script stops after it), TAIL_TIMEOUT_MS (give up after this long).
//
// It writes one JSON line per thing it sees: {"type":"open"}, {"type":"error","code":…} (a broken
// or refused connection), {"type":"log","id":…,"message":…} per event, {"type":"timeout"}.
// Exit status: 0 after END_MESSAGE, 2 when the EventSource gave up (closed), 3 on timeout.
import { EventSource } from "eventsource";

const { TAIL_URL, OBSVC_KEY, END_MESSAGE = "end", TAIL_TIMEOUT_MS = "60000" } = process.env;
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");

const es = new EventSource(TAIL_URL, {
  fetch: (input, init) =>
    fetch(input, { ...init, headers: { ...init.headers, Authorization: `Bearer ${OBSVC_KEY}` } }),
});

const timer = setTimeout(() => {
  out({ type: "timeout" });
  es.close();
  process.exitCode = 3;
}, Number(TAIL_TIMEOUT_MS));

es.addEventListener("open", () => out({ type: "open" }));
es.addEventListener("error", (e) => {
  out({ type: "error", code: e.code ?? null, message: e.message ?? "" });
  if (es.readyState === EventSource.CLOSED) {
    clearTimeout(timer);
    process.exitCode = 2;
  }
});
es.addEventListener("log", (e) => {
  const entry = JSON.parse(e.data);
  out({ type: "log", id: e.lastEventId, message: entry.message });
  if (entry.message === END_MESSAGE) {
    es.close();
    clearTimeout(timer);
  }
});
