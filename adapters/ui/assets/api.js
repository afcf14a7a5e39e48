// The REST API as the page uses it: every request carries the API key from sessionStorage as
// "Authorization: Bearer" (never in the URL), and every failure becomes an ApiError whose message
// a person can act on.

const KEY = 'obsvc.apiKey';

export function apiKey() { return sessionStorage.getItem(KEY) || ''; }
export function setApiKey(k) { if (k) sessionStorage.setItem(KEY, k); else sessionStorage.removeItem(KEY); }

export class ApiError extends Error {
  // errors are the problem's offending fields and parameters ({ parameter, pointer, detail }).
  constructor(status, message, errors = []) { super(message); this.status = status; this.errors = errors; }
}

function headers(extra) {
  const h = new Headers(extra || {});
  const k = apiKey();
  if (k) h.set('Authorization', 'Bearer ' + k);
  return h;
}

// explain turns a refused answer into a sentence, using the problem+json detail when there is one.
async function explain(resp) {
  let detail = '';
  let errors = [];
  try {
    const p = await resp.json();
    detail = p.detail || p.title || '';
    if (Array.isArray(p.errors)) errors = p.errors;
  } catch { /* not JSON */ }
  if (resp.status === 401) {
    return new ApiError(401, apiKey()
      ? 'The server did not accept this API key (401). Check the key and enter it again above.'
      : 'The server needs an API key (401). Enter it above.');
  }
  if (resp.status === 403) {
    return new ApiError(403, 'This API key may not do that (403)' + (detail ? ': ' + detail : '.'));
  }
  return new ApiError(resp.status, `The server answered ${resp.status}` + (detail ? ': ' + detail : '.'), errors);
}

export async function getJSON(url, signal) {
  const resp = await fetch(url, { headers: headers({ Accept: 'application/json' }), signal });
  if (!resp.ok) throw await explain(resp);
  return { body: await resp.json(), resp };
}

// sendJSON sends a request with a JSON body (or none) and returns the answer's JSON, if any.
export async function sendJSON(method, url, body) {
  const h = headers({ Accept: 'application/json' });
  if (body !== undefined) h.set('Content-Type', 'application/json');
  const resp = await fetch(url, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!resp.ok) throw await explain(resp);
  return resp.status === 204 ? null : resp.json();
}

// download reads a file the API sends as an attachment (GET /logs/export) with the key, and
// returns it as a Blob with the file name its Content-Disposition gives.
export async function download(url, signal) {
  const resp = await fetch(url, { headers: headers(), signal });
  if (!resp.ok) throw await explain(resp);
  const m = /filename="([^"]*)"/.exec(resp.headers.get('Content-Disposition') || '');
  return { blob: await resp.blob(), name: m ? m[1] : '' };
}

// nextLink returns the absolute URL of a page's rel="next" Link, resolved against the request URL.
export function nextLink(resp) {
  const link = resp.headers.get('Link') || '';
  const m = /<([^>]*)>\s*;\s*rel="?next"?/.exec(link);
  return m ? new URL(m[1], resp.url).toString() : '';
}

// tail follows GET /logs/tail (Server-Sent Events) with fetch, so the key travels in a header,
// calling onEntry for each entry. After a drop it resumes with Last-Event-ID, so nothing is missed
// or repeated. It returns a function that stops it.
export function tail(url, { onEntry, onState }) {
  const ctl = new AbortController();
  let lastId = '';
  let retry = 1000;
  let stopped = false;
  const stop = () => { stopped = true; ctl.abort(); };
  (async () => {
    while (!stopped) {
      try {
        const h = headers({ Accept: 'text/event-stream' });
        if (lastId) h.set('Last-Event-ID', lastId);
        const resp = await fetch(url, { headers: h, signal: ctl.signal, cache: 'no-store' });
        if (!resp.ok) {
          const err = await explain(resp);
          if (resp.status === 401 || resp.status === 403 || resp.status === 400 || resp.status === 404) {
            onState('error', err); return;
          }
          throw err;
        }
        onState('live');
        const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        let ev = { id: '', event: '', data: [] };
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let nl;
          while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
            if (nl === buf.length - 1 && buf[nl] === '\r') break; // a CRLF split between reads
            const line = buf.slice(0, nl);
            buf = buf.slice(nl + (buf.startsWith('\r\n', nl) ? 2 : 1));
            if (line === '') {
              if (ev.data.length && (ev.event === '' || ev.event === 'log')) {
                if (ev.id) lastId = ev.id;
                try { onEntry(JSON.parse(ev.data.join('\n'))); } catch { /* not an entry */ }
              } else if (ev.id) {
                lastId = ev.id;
              }
              ev = { id: '', event: '', data: [] };
              continue;
            }
            if (line.startsWith(':')) continue; // heartbeat
            const c = line.indexOf(':');
            const field = c < 0 ? line : line.slice(0, c);
            let val = c < 0 ? '' : line.slice(c + 1);
            if (val.startsWith(' ')) val = val.slice(1);
            if (field === 'id') ev.id = val;
            else if (field === 'event') ev.event = val;
            else if (field === 'data') ev.data.push(val);
            else if (field === 'retry' && /^\d+$/.test(val)) retry = Math.max(250, Number(val));
          }
        }
      } catch (err) {
        if (stopped) return;
        onState('reconnecting', err);
      }
      if (stopped) return;
      onState('reconnecting');
      await new Promise((r) => setTimeout(r, retry));
    }
  })();
  return stop;
}
