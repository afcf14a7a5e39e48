// The log explorer: a project, a time range and filters (all kept in the page's URL, so a link
// can be shared), the histogram of the range, the entries newest first with infinite scroll, and
// a live tail. Everything comes from the REST API; see api.js for how requests are authenticated.
import { ApiError, apiKey, download, getJSON, nextLink, setApiKey, tail } from './api.js';
import { Histogram, colorFor, stepFor } from './chart.js';
import { quoteValue, setupQueryBar } from './query.js';
import { setupAlerts } from './alerts.js';
import { setupSearches } from './searches.js';
import { fmtTime, fromInput, setTzMode, toInput, tzMode, zoneLabel } from './time.js';
import { setupViews } from './views.js';

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];
// The API stores levels canonical: case-insensitive, these spellings of common loggers as one of
// the six (openapi.yaml, LogEntry.level), any other text lower-cased. The page reads levels in
// its URL the same way, so a link with level=WARNING shows the warn chip checked.
const SYNONYMS = {
  finest: 'trace', verbose: 'trace', fine: 'debug', finer: 'debug',
  information: 'info', informational: 'info', notice: 'info', warning: 'warn',
  err: 'error', severe: 'error', critical: 'fatal', crit: 'fatal', alert: 'fatal',
  emerg: 'fatal', emergency: 'fatal', panic: 'fatal', dpanic: 'fatal',
};
const canonicalLevel = (l) => { const f = l.toLowerCase(); return SYNONYMS[f] || f; };
const PRESETS = { '15m': 15 * 60e3, '1h': 3600e3, '24h': 86400e3, '7d': 7 * 86400e3 };
const PAGE = 100;

const $ = (id) => document.getElementById(id);
const el = (tag, props = {}, ...children) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k in e) e[k] = v;
    else e.setAttribute(k, v);
  }
  e.append(...children.filter((c) => c !== null && c !== undefined));
  return e;
};

// state is what the URL holds.
const state = { project: '', range: '1h', from: 0, to: 0, query: '', q: '', user: '', subject: '', trace: '', levels: [], live: false, by: 'level',
  // view is '' (the list), 'context' (around the entry vid, neighbours narrowed by vnarrow) or
  // 'trace' (every entry of the trace vtrace).
  view: '', vid: '', vnarrow: '', vtrace: '' };

let projects = [];
let loadSeq = 0; // the current load; answers to older ones are dropped
let listAbort = null;
let nextURL = '';
let loadingMore = false;
const seen = new Set(); // ids in the table: no entry twice (infinite scroll, live)
let stopTail = null;
let liveState = ''; // the tail's: '' (off), 'connecting', 'on', 'reconnecting' or 'stopped'

const hist = new Histogram($('hist'), (from, to) => {
  state.range = 'abs';
  state.from = from;
  state.to = to;
  showState();
  reload();
});
// showView opens a context or a trace (or, with view '', the list) as a history entry.
function showView(patch) {
  Object.assign(state, { view: '', vid: '', vnarrow: '', vtrace: '' }, patch);
  showState();
  reload();
  window.scrollTo(0, 0);
}
const views = setupViews({ $, el, state, show: showView });
let statsTimer = 0; // Live: the pending refresh of the counts
let booted = false; // after the first load, every change of the state is a history entry

// --- URL state ---------------------------------------------------------------------------

function readURL() {
  const p = new URLSearchParams(location.search);
  state.project = p.get('project') || '';
  state.range = p.get('range') || '1h';
  state.from = Number(p.get('from')) || 0;
  state.to = Number(p.get('to')) || 0;
  if (state.range === 'abs' && !(state.from && state.to)) state.range = '1h';
  if (state.range !== 'abs' && !PRESETS[state.range]) state.range = '1h';
  state.query = p.get('query') || '';
  state.q = p.get('q') || '';
  state.user = p.get('user') || '';
  state.subject = p.get('subject') || '';
  state.trace = p.get('trace') || '';
  state.levels = [...new Set(p.getAll('level').filter((l) => l).map(canonicalLevel))];
  state.live = p.get('live') === '1';
  state.by = p.get('by') || 'level';
  state.view = ['context', 'trace'].includes(p.get('view')) ? p.get('view') : '';
  state.vid = state.view === 'context' ? p.get('id') || '' : '';
  state.vnarrow = state.view === 'context' && ['subject', 'trace'].includes(p.get('narrow')) ? p.get('narrow') : '';
  state.vtrace = state.view === 'trace' ? p.get('trace_id') || '' : '';
}

function writeURL() {
  const p = new URLSearchParams();
  if (state.project) p.set('project', state.project);
  p.set('range', state.range);
  if (state.range === 'abs') { p.set('from', state.from); p.set('to', state.to); }
  if (state.query) p.set('query', state.query);
  for (const k of ['q', 'user', 'subject', 'trace']) if (state[k]) p.set(k, state[k]);
  for (const l of state.levels) p.append('level', l);
  if (state.live) p.set('live', '1');
  if (state.by !== 'level') p.set('by', state.by);
  if (state.view === 'context') { p.set('view', 'context'); p.set('id', state.vid); if (state.vnarrow) p.set('narrow', state.vnarrow); }
  if (state.view === 'trace') { p.set('view', 'trace'); p.set('trace_id', state.vtrace); }
  // Each change is a history entry, so Back and Forward walk queries, ranges and zooms; the
  // first load only completes the URL it was opened with.
  const url = '/ui?' + p.toString();
  if (url === location.pathname + location.search) return;
  if (booted) history.pushState(null, '', url); else history.replaceState(null, '', url);
}

// range returns the [start, end] of the current choice in Unix milliseconds.
function range() {
  if (state.range === 'abs') return [state.from, state.to];
  // A preset starts on a multiple of its histogram's step, so the bars' edges are round.
  const now = Date.now();
  const step = stepFor(PRESETS[state.range], maxBuckets());
  return [Math.floor((now - PRESETS[state.range]) / step) * step, now];
}

// query builds the filter parameters every endpoint shares.
function query(extra = {}) {
  const p = new URLSearchParams({ project_id: state.project });
  if (state.query) p.set('query', state.query);
  if (state.q) p.set('q', state.q);
  if (state.user) p.set('user_id', state.user);
  if (state.subject) p.set('subject', state.subject);
  if (state.trace) p.set('trace_id', state.trace);
  for (const l of state.levels) p.append('log_level', l);
  for (const [k, v] of Object.entries(extra)) p.set(k, v);
  return p;
}

// --- form ---------------------------------------------------------------------------------


function showState() {
  $('project').value = state.project;
  $('range').value = state.range;
  const abs = state.range === 'abs';
  for (const f of document.querySelectorAll('.field.abs')) f.hidden = !abs;
  if (abs) { $('from').value = toInput(state.from); $('to').value = toInput(state.to); }
  for (const k of ['q', 'user', 'subject', 'trace']) $(k).value = state[k];
  if (document.activeElement !== $('query') || !booted) $('query').value = state.query;
  addLevelChips(state.levels);
  for (const c of document.querySelectorAll('#levels input')) c.checked = state.levels.includes(c.value);
  $('live').checked = state.live;
  if (![...$('split').options].some((o) => o.value === state.by)) $('split').append(el('option', { value: state.by }, state.by));
  $('split').value = state.by;
  const p = projects.find((x) => x.id === state.project);
  $('retention').textContent = p ? (p.retention_days == null ? 'keeps entries forever' : `keeps ${p.retention_days} days`) : '';
  writeURL();
}

function readForm() {
  state.project = $('project').value;
  state.range = $('range').value;
  if (state.range === 'abs') {
    const f = fromInput($('from').value);
    const t = fromInput($('to').value);
    const [a, b] = range();
    state.from = Number.isFinite(f) ? f : a;
    state.to = Number.isFinite(t) ? t + 999 : b;
  }
  for (const k of ['q', 'user', 'subject', 'trace']) state[k] = $(k).value.trim();
  state.query = $('query').value.trim();
  state.levels = [...document.querySelectorAll('#levels input:checked')].map((c) => c.value);
  state.live = $('live').checked;
}

// addLevelChips adds a chip for each level that has none yet: the six first, then any other
// level a project uses (from the stats of the range, or the URL), so custom levels can be chosen
// too. Chips are never removed while the page is open.
function addLevelChips(levels) {
  const have = new Set([...document.querySelectorAll('#levels input')].map((c) => c.value));
  for (const l of levels) {
    if (have.has(l)) continue;
    have.add(l);
    const swatch = el('span', { class: 'swatch' });
    swatch.style.backgroundColor = colorFor(l); // the colour of its series in the chart
    $('levels').append(el('label', { class: 'chip ' + (LEVELS.includes(l) ? 'lvl-' + l : 'lvl-other') },
      el('input', { type: 'checkbox', name: 'level', value: l, checked: state.levels.includes(l) }), swatch, l));
  }
}

function setupForm() {
  addLevelChips(LEVELS);
  $('filters').addEventListener('submit', (e) => { e.preventDefault(); apply(); });
  for (const id of ['project', 'range', 'from', 'to']) $(id).addEventListener('change', () => {
    if (id === 'range' && $('range').value === 'abs' && state.range !== 'abs') {
      [state.from, state.to] = range(); // start from the preset in view
      state.range = 'abs';
      showState();
    }
    apply();
  });
  $('levels').addEventListener('change', apply);
  $('live').addEventListener('change', apply);
  let typing = 0;
  for (const id of ['q', 'user', 'subject', 'trace']) $(id).addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(apply, 350);
  });
  $('zoom-out').addEventListener('click', zoomOut);
  for (const f of ['ndjson', 'csv']) $('export-' + f).addEventListener('click', saveExport);
  applyTheme();
  $('theme').addEventListener('change', () => {
    if ($('theme').value === 'auto') localStorage.removeItem(THEME); else localStorage.setItem(THEME, $('theme').value);
    applyTheme();
    reload(); // the chart's axes take the theme's colours
  });
  window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => reload());
  $('filters-toggle').addEventListener('click', () => {
    const open = $('filters').classList.toggle('open');
    $('filters-toggle').setAttribute('aria-expanded', String(open));
  });
  $('tz').value = tzMode();
  showZone();
  $('tz').addEventListener('change', () => { setTzMode($('tz').value); showZone(); showState(); reload(); });
  $('split').addEventListener('change', () => { state.by = $('split').value; showState(); reload(); });
  window.addEventListener('popstate', () => { readURL(); $('query').value = state.query; showState(); reload(); });
  setupQueryBar({ $, el, state, range, query, apply });
  setupSearches({ $, el, state, rangeSeconds, open: openSearch });
  setupAlerts({ $, el, state, rangeSeconds, fmtTime });
  $('reset').addEventListener('click', () => {
    Object.assign(state, { query: '', q: '', user: '', subject: '', trace: '', levels: [] });
    showState();
    reload();
  });
  $('key-form').addEventListener('submit', (e) => {
    e.preventDefault();
    setApiKey($('key').value.trim());
    $('key').value = '';
    keyHint();
    start();
  });
  $('key-forget').addEventListener('click', () => { setApiKey(''); keyHint(); start(); });
  keyHint();
}

function keyHint() {
  $('key').placeholder = apiKey() ? 'a key is in use (this tab only)' : 'only if the server has keys';
}

// rangeSeconds is the width of the range in view, in whole seconds, as a saved search keeps it.
function rangeSeconds() {
  if (state.range !== 'abs') return PRESETS[state.range] / 1000;
  return Math.min(31622400, Math.max(1, Math.round((state.to - state.from + 1) / 1000)));
}

// openSearch shows a saved search: its query over its range back from now, and no other filter,
// as a history entry.
function openSearch(s) {
  const ms = s.range_seconds * 1000;
  const preset = Object.keys(PRESETS).find((k) => PRESETS[k] === ms);
  Object.assign(state, { query: s.query, q: '', user: '', subject: '', trace: '', levels: [] });
  if (preset) state.range = preset;
  else { state.range = 'abs'; state.to = Date.now(); state.from = state.to - ms + 1; }
  $('query').value = state.query;
  showState();
  reload();
}

// maxBuckets is how many bars the chart draws at most: fewer on a narrow screen, so each stays
// several pixels wide.
function maxBuckets() { return window.innerWidth < 700 ? 40 : 120; }

// The theme: the system's (prefers-color-scheme), or light or dark as chosen, remembered.
const THEME = 'obsvc.theme';
function applyTheme() {
  const t = localStorage.getItem(THEME);
  if (t === 'light' || t === 'dark') document.documentElement.dataset.theme = t;
  else delete document.documentElement.dataset.theme;
  $('theme').value = t === 'light' || t === 'dark' ? t : 'auto';
}

// showZone says which zone the page's times are in.
function showZone() {
  for (const e of document.querySelectorAll('.tz-label')) e.textContent = zoneLabel();
}

// zoomOut doubles the range in view around its middle (never past now), as a history entry.
function zoomOut() {
  const [a, b] = range();
  const w = b - a + 1;
  const now = Date.now();
  state.to = Math.min(now, b + Math.round(w / 2));
  state.from = state.to - 2 * w + 1;
  state.range = 'abs';
  showState();
  reload();
}

function apply() {
  readForm();
  if (state.trace && !/^[0-9a-fA-F]{32}$/.test(state.trace)) {
    say('A trace id is 32 hexadecimal digits.');
    return;
  }
  showState();
  reload();
}

// --- messages -----------------------------------------------------------------------------

function say(text, ok = false) {
  const m = $('message');
  m.textContent = text;
  m.classList.toggle('ok', ok);
  m.hidden = !text;
}

function fail(err) {
  if (err && err.name === 'AbortError') return;
  if (showQueryError(err)) return;
  say(err instanceof ApiError ? err.message : 'Could not reach the server: ' + (err && err.message));
  if (err instanceof ApiError && (err.status === 401 || err.status === 403)) $('key').focus();
}

// --- loading ------------------------------------------------------------------------------

async function start() {
  say('');
  try {
    projects = await loadProjects();
  } catch (err) {
    projects = [];
    $('project').replaceChildren();
    clearResults();
    hist.clear();
    if (err instanceof ApiError && err.status === 404 && state.project) unknownProject(state.project);
    else fail(err);
    return;
  }
  $('project').replaceChildren(...projects.map((p) => el('option', { value: p.id }, p.name)));
  if (projects.length === 0) {
    say('No projects yet: create one with POST /projects, then send entries to POST /logs.', true);
    return;
  }
  // A link to a project that does not exist (or that the key may not read) says so, and shows
  // no other project in its place.
  if (state.project && !projects.some((p) => p.id === state.project)) {
    $('project').prepend(el('option', { value: '' }, '— choose a project —'));
    $('project').value = '';
    unknownProject(state.project);
    return;
  }
  if (!state.project) state.project = projects[projects.length - 1].id;
  showState();
  reload();
}

function unknownProject(id) {
  clearResults();
  hist.clear();
  state.project = '';
  say(`No project has the id “${id}”, or this API key may not read it. Check the link` + (projects.length ? ', or choose a project above.' : '.'));
}

// loadProjects lists the projects the key may read: all of them for an admin key; for a key of
// one project (which may not list projects) the one the URL names.
async function loadProjects() {
  try {
    return (await getJSON('/projects')).body;
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 403)) throw err;
    if (!state.project) {
      throw new ApiError(403, 'This API key may not list projects. Open the page with its project: /ui?project=PROJECT_ID');
    }
    return [(await getJSON('/projects/' + encodeURIComponent(state.project))).body];
  }
}

function clearResults() {
  $('rows').replaceChildren();
  $('more').replaceChildren();
  seen.clear();
  nextURL = '';
  $('more').textContent = '';
  liveState = '';
  showStatus();
  $('hist-total').textContent = '';
}

// showQueryError shows a 400 about the query under the bar, with a caret at the position the
// parser names, and says whether it did.
function showQueryError(err) {
  const box = $('query-error');
  const q = err instanceof ApiError && err.status === 400 && state.query &&
    (err.errors || []).find((e) => e && e.parameter === 'query' && typeof e.detail === 'string');
  if (!q) {
    if (!err) box.hidden = true;
    return false;
  }
  const m = /at (\d+)\s*$/.exec(q.detail);
  const pos = m ? Number(m[1]) : 0;
  box.replaceChildren(el('div', { class: 'query-msg' }, q.detail));
  if (pos > 0) {
    const chars = [...state.query];
    box.append(el('pre', { class: 'caret' }, chars.join('') + '\n' + ' '.repeat(Math.min(pos - 1, chars.length)) + '^'));
  }
  box.dataset.position = String(pos);
  box.hidden = false;
  return true;
}

function reload() {
  if (!state.project) return;
  booted = true;
  showQueryError(null);
  clearTimeout(statsTimer);
  statsTimer = 0;
  const seq = ++loadSeq;
  if (listAbort) listAbort.abort();
  listAbort = new AbortController();
  if (stopTail) { stopTail(); stopTail = null; }
  if (views.render()) { say(''); return; } // a context or a trace in place of the list
  say('');
  clearResults();
  const [startT, endT] = range();
  exportLinks(startT, endT);
  placeholders();
  const signal = listAbort.signal;
  // One read at a time, the table's first: the server runs one read of a key at a time (its
  // read share, MAX_READS_PER_KEY) and refuses one that waits too long, so on a large project
  // the table asked beside the counts and the fields was answered 429. Then the counts, then
  // the fields, each as the one before is done (drawn or failed).
  const first = async () => {
    await loadPage(seq, '/logs?' + query({ order: 'desc', limit: PAGE, start_time: startT, end_time: endT }), signal);
    if (seq !== loadSeq) return;
    await loadStats(seq, startT, endT, signal);
    if (seq !== loadSeq) return;
    await loadFields(seq, startT, endT, signal);
  };
  // Live: the first page is read once the tail is open, so an entry written between the two
  // requests is in one of them (and shown once), never in neither.
  if (state.live) follow(seq, first); else first();
}

// drawn notes that the table's first page or the chart is on the page; once both are, the page
// marks 'explorer-first-render' (once per page load) at the next frame, for anyone measuring it.
const firstDrawn = new Set();
function drawn(what) {
  if (firstDrawn.has('marked')) return;
  firstDrawn.add(what);
  if (!firstDrawn.has('table') || !firstDrawn.has('chart')) return;
  firstDrawn.add('marked');
  requestAnimationFrame(() => performance.mark('explorer-first-render'));
}

async function loadStats(seq, startT, endT, signal) {
  // The same range as the table's, so the counts are those of the entries it lists.
  const step = state.range === 'abs' ? stepFor(endT - startT + 1, maxBuckets()) : stepFor(PRESETS[state.range], maxBuckets());
  // Every level a project uses, up to the most series an answer holds (past them, one "other").
  const q = query({ start_time: startT, end_time: endT, step, by: state.by, series: 100 }).toString();
  $('hist').dataset.query = q; // what the counts answer, for anyone checking them against the API
  try {
    const { body } = await getJSON('/logs/stats?' + q, signal);
    if (seq !== loadSeq) return;
    hist.draw(body);
    drawn('chart');
    if (state.by === 'level') addLevelChips(body.series.map((s) => s.value).filter((v) => typeof v === 'string'));
    $('hist-total').textContent = `· ${body.total.toLocaleString('en')} in range`;
    $('hist-total').dataset.total = String(body.total);
  } catch (err) {
    if (seq !== loadSeq || (err && err.name === 'AbortError')) return;
    hist.clear();
    $('hist-total').textContent = err instanceof ApiError && err.status === 404
      ? '· this server has no GET /logs/stats'
      : err instanceof ApiError && err.status === 400 && state.query ? '· no counts until the query is fixed' : '· counts unavailable';
    if (err instanceof ApiError && (err.status === 401 || err.status === 403)) fail(err);
  }
}

async function loadPage(seq, url, signal) {
  loadingMore = true;
  $('more').textContent = 'Loading…';
  try {
    const { body, resp } = await getJSON(url, signal);
    if (seq !== loadSeq) return;
    removePlaceholders();
    for (const entry of body) addRow(entry, false);
    nextURL = nextLink(resp);
    if (nextURL) $('more').textContent = '';
    else if ($('rows').children.length) $('more').textContent = 'No more entries in this range.';
    // A new box in place of the old one, which moved up as the skeleton rows went: what appears
    // where the rows were is new content, not the page jumping.
    else $('more').replaceWith(el('div', { id: 'more', class: 'more' }, emptyState()));
    showStatus();
    drawn('table');
  } catch (err) {
    if (seq !== loadSeq || (err && err.name === 'AbortError')) return;
    removePlaceholders();
    $('more').textContent = '';
    fail(err);
    // A failure to reach the server, or one it may recover from, can be tried again.
    if (!(err instanceof ApiError) || err.status >= 500 || err.status === 429) {
      const first = $('rows').children.length === 0;
      $('more').replaceChildren(el('div', { class: 'retry' },
        el('span', {}, err instanceof ApiError ? err.message : 'Could not reach the server. '),
        el('button', { type: 'button', id: 'retry', onclick: () => (first ? reload() : loadPage(loadSeq, url, listAbort.signal)) }, 'Retry')));
    }
  } finally {
    if (seq === loadSeq) loadingMore = false;
  }
  if (seq === loadSeq) maybeMore();
}

// placeholders fill the table while its first page loads, so the layout does not jump.
function placeholders() {
  for (let i = 0; i < 8; i++) {
    $('rows').append(el('tr', { class: 'placeholder', 'aria-hidden': 'true' }, ...[1, 2, 3, 4, 5].map(() => el('td', {}, el('span', { class: 'bone' })))));
  }
}

function removePlaceholders() {
  for (const r of document.querySelectorAll('#rows tr.placeholder')) r.remove();
}

// emptyState says that nothing matches, and what to try next.
function emptyState() {
  const tries = el('ul');
  const act = (label, fn) => tries.append(el('li', {}, el('button', { type: 'button', class: 'linkish', onclick: () => { fn(); showState(); reload(); } }, label)));
  if (state.range !== '7d') act('Widen the range to the last 7 days', () => { state.range = '7d'; });
  if (state.query) act('Remove the query', () => { state.query = ''; $('query').value = ''; });
  if (state.q || state.user || state.subject || state.trace || state.levels.length) {
    act('Clear the other filters', () => Object.assign(state, { q: '', user: '', subject: '', trace: '', levels: [] }));
  }
  tries.append(el('li', {}, 'If the project has no entries yet, send one: ',
    el('code', {}, `curl -X POST ${location.origin}/logs -H 'Authorization: Bearer <key>' -H 'Content-Type: application/json' -d '[{"project_id":"${state.project}","level":"info","message":"hello"}]'`)));
  return el('div', { class: 'empty' }, el('p', {}, 'No entries match in this range. Try:'), tries);
}

// maybeMore loads the next page when the end of the table is in view (infinite scroll).
function maybeMore() {
  if (!nextURL || loadingMore) return;
  const r = $('more').getBoundingClientRect();
  if (r.top < window.innerHeight + 200) loadPage(loadSeq, nextURL, listAbort.signal);
}

// follow opens the live tail and calls opened when the tail has answered, whether it is open or
// not; entries it sends that match the page's filters go to the top of the table.
function follow(seq, opened) {
  const url = '/logs/tail?' + query();
  liveState = 'connecting';
  showStatus();
  let waiting = true;
  stopTail = tail(url, {
    onEntry: (entry) => {
      if (seq !== loadSeq || !matches(entry)) return;
      addRow(entry, true);
      refreshStats(seq);
    },
    onState: (s, err) => {
      if (seq !== loadSeq) return;
      if (waiting) { waiting = false; opened(); }
      liveState = { live: 'on', reconnecting: 'reconnecting', error: 'stopped' }[s] || liveState;
      showStatus();
      if (s === 'error') fail(err);
    },
  });
}

// --- export -------------------------------------------------------------------------------

// exportLinks points the two downloads at GET /logs/export with exactly the list's filters,
// query and range. The API key travels in a header, which a plain link cannot send: a click
// fetches the file with it and saves it through a Blob URL (the href stays for copying, and for a
// server without keys).
function exportLinks(startT, endT) {
  for (const f of ['ndjson', 'csv']) {
    const a = $('export-' + f);
    a.href = '/logs/export?' + query({ start_time: startT, end_time: endT, format: f });
    a.download = `logs-${state.project}.${f}`;
  }
}

async function saveExport(ev) {
  const a = ev.currentTarget;
  ev.preventDefault();
  if (a.dataset.busy) return;
  a.dataset.busy = '1';
  a.setAttribute('aria-busy', 'true');
  try {
    const { blob, name } = await download(a.href);
    const url = URL.createObjectURL(blob);
    const save = el('a', { href: url, download: name || a.download, hidden: true });
    document.body.append(save);
    save.click();
    save.remove();
    a.dataset.saved = String(Number(a.dataset.saved || 0) + 1); // for anyone checking the download
    setTimeout(() => URL.revokeObjectURL(url), 60e3);
  } catch (err) {
    fail(err);
  } finally {
    delete a.dataset.busy;
    a.removeAttribute('aria-busy');
  }
}

// --- fields ---------------------------------------------------------------------------------

const OWN_FIELDS = ['level', 'subject', 'user_id'];
const FIELD_NAME = /^[^\s():"[\]{}\\*]+$/; // a key the query language can name bare

// loadFields shows the top values, with exact counts, of the entry's fields and of the most
// common attribute keys, for the range and filters in view: GET /logs/fields, then one
// GET /logs/facets for all of them. A click narrows the query to a value; with Alt or Shift it
// excludes it.
async function loadFields(seq, startT, endT, signal) {
  const box = $('fields');
  box.setAttribute('aria-busy', 'true');
  try {
    const { body: keys } = await getJSON('/logs/fields?' + query({ start_time: startT, end_time: endT }), signal);
    const attrs = keys.map((k) => k.field).filter((f) => FIELD_NAME.test(f) && !OWN_FIELDS.includes(f)).slice(0, 6);
    const names = [...OWN_FIELDS, ...attrs];
    const p = query({ start_time: startT, end_time: endT, limit: 5 });
    for (const f of names) p.append('field', f);
    const { body } = await getJSON('/logs/facets?' + p, signal);
    if (seq !== loadSeq) return;
    box.replaceChildren(...body.facets.map(fieldCard));
    box.dataset.query = state.query; // what the panel answers, for anyone checking it
    // The split-by choices: the fields shown, and whichever the URL names.
    const keep = $('split').value;
    $('split').replaceChildren(...[...new Set([...names, state.by])].map((f) => el('option', { value: f }, f)));
    $('split').value = keep;
  } catch (err) {
    if (seq !== loadSeq || (err && err.name === 'AbortError')) return;
    box.replaceChildren(el('p', { class: 'hint' }, 'Field values unavailable.'));
  } finally {
    if (seq === loadSeq) box.removeAttribute('aria-busy');
  }
}

function fieldCard(f) {
  const total = f.values.reduce((a, v) => a + v.count, 0) + f.other + f.missing;
  const list = el('ul', { class: 'values' });
  for (const v of f.values) {
    if (v.value === null || typeof v.value === 'object') continue;
    const text = String(v.value);
    const b = el('button', { type: 'button', class: 'value', title: `Show only ${f.field}:${text} (Alt or Shift: leave it out)` },
      el('span', { class: 'v' }, text), el('span', { class: 'n' }, v.count.toLocaleString('en')));
    b.dataset.field = f.field;
    b.dataset.value = text;
    b.addEventListener('click', (e) => narrow(f.field, v.value, e.altKey || e.shiftKey));
    const bar = el('span', { class: 'share' });
    bar.style.width = total ? `${Math.max(1, Math.round((100 * v.count) / total))}%` : '0';
    list.append(el('li', {}, b, bar));
  }
  const rest = [];
  if (f.other) rest.push(`${f.other.toLocaleString('en')} other`);
  if (f.missing) rest.push(`${f.missing.toLocaleString('en')} without`);
  return el('section', { class: 'field-card' }, el('h3', {}, f.field), list, rest.length ? el('p', { class: 'hint' }, rest.join(' · ')) : null);
}

// narrow adds field:value (or -field:value) to the query, as a history entry.
function narrow(field, value, exclude) {
  const term = (exclude ? '-' : '') + field + ':' + quoteValue(value);
  state.query = state.query ? state.query + ' ' + term : term;
  $('query').value = state.query;
  showState();
  reload();
}

// refreshStats redraws the histogram and its total under Live, at most once every 2 seconds:
// the first entry after a refresh schedules the next.
function refreshStats(seq) {
  if (statsTimer) return;
  statsTimer = setTimeout(() => {
    statsTimer = 0;
    if (seq !== loadSeq) return;
    const [startT, endT] = range();
    loadStats(seq, startT, endT, listAbort.signal);
  }, 2000);
}

// matches says whether a live entry belongs in the table: in the range and matching every filter.
// The page checks this itself, whichever of the filters the stream applies, so a live row never
// shows what the table's own query would not (the query itself only the stream can apply: the
// server evaluates it as it evaluates a listing's); q compares case-folded text, close to the API's
// simple case folding.
function matches(e) {
  const [from, to] = range();
  const fold = (s) => s.toLowerCase().replace(/ς/g, 'σ');
  // A preset ends now, and live entries are newer than now: only an absolute range has an end.
  return e.time >= from && (state.range !== 'abs' || e.time <= to) &&
    (!state.q || fold(e.message).includes(fold(state.q))) &&
    (!state.user || e.user_id === state.user) &&
    (!state.subject || e.subject === state.subject) &&
    (!state.trace || (e.trace_id || '').toLowerCase() === state.trace.toLowerCase()) &&
    (state.levels.length === 0 || state.levels.includes(e.level));
}

// showStatus tells how many entries the table shows and how the live tail is doing; data-live
// holds the tail's state for anyone checking it.
function showStatus() {
  const live = { connecting: 'connecting live… · ', on: 'live · ', reconnecting: 'live: reconnecting… · ', stopped: 'live stopped · ' }[liveState] || '';
  $('status').textContent = seen.size || live ? `· ${live}${seen.size.toLocaleString('en')} shown` : '';
  $('status').dataset.live = liveState;
}

// --- rows ---------------------------------------------------------------------------------


function filterBy(key, value) {
  state[key] = value;
  showState();
  reload();
}

function addRow(e, live) {
  if (seen.has(e.id)) return;
  seen.add(e.id);
  const tr = el('tr', { class: 'entry' + (live ? ' new' : ''), tabIndex: 0, 'aria-expanded': 'false' },
    el('td', {}, el('time', { dateTime: new Date(e.time).toISOString() }, fmtTime(e.time))),
    el('td', { class: 'lvl ' + (LEVELS.includes(e.level) ? 'lvl-' + e.level : 'lvl-other') }, e.level),
    el('td', { title: e.subject || '' }, e.subject || ''),
    el('td', {}, e.user_id ? el('button', { type: 'button', class: 'linkish', title: 'Show only this user', onclick: (ev) => { ev.stopPropagation(); filterBy('user', e.user_id); } }, e.user_id) : ''),
    el('td', { title: e.message }, el('div', { class: 'msg-preview' }, e.message)));
  tr.dataset.id = e.id;
  tr.dataset.time = String(e.time);
  tr.addEventListener('click', () => toggle(tr, e));
  tr.addEventListener('keydown', (ev) => {
    if (ev.target !== tr) return;
    if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); toggle(tr, e); }
    if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
      ev.preventDefault();
      let n = ev.key === 'ArrowDown' ? tr.nextElementSibling : tr.previousElementSibling;
      while (n && !n.classList.contains('entry')) n = ev.key === 'ArrowDown' ? n.nextElementSibling : n.previousElementSibling;
      if (n) n.focus();
    }
  });
  if (live) $('rows').prepend(tr); else $('rows').append(tr);
  if (live) showStatus();
}

function toggle(tr, e) {
  const open = tr.getAttribute('aria-expanded') === 'true';
  tr.setAttribute('aria-expanded', String(!open));
  if (open) { if (tr.nextElementSibling && tr.nextElementSibling.classList.contains('detail')) tr.nextElementSibling.remove(); return; }
  const dl = el('dl', { class: 'fields' });
  const add = (k, v) => dl.append(el('dt', {}, k), el('dd', {}, v));
  add('id', e.id);
  add('time', `${fmtTime(e.time)} (${new Date(e.time).toISOString()}, ${e.time})`);
  add('level', e.level);
  add('message', el('div', { class: 'msg' }, e.message));
  if (e.subject) add('subject', el('button', { type: 'button', class: 'linkish', title: 'Show only this subject', onclick: () => filterBy('subject', e.subject) }, e.subject));
  if (e.user_id) add('user_id', el('button', { type: 'button', class: 'linkish', title: 'Show only this user', onclick: () => filterBy('user', e.user_id) }, e.user_id));
  if (e.trace_id) {
    add('trace_id', el('span', {}, el('button', { type: 'button', class: 'linkish trace-link', title: 'Every entry of this trace, oldest first', onclick: () => showView({ view: 'trace', vtrace: e.trace_id }) }, e.trace_id),
      ' ', el('button', { type: 'button', class: 'small', title: 'Show only this trace in the list', onclick: () => filterBy('trace', e.trace_id) }, 'Filter by it')));
  }
  if (e.span_id) add('span_id', e.span_id);
  if (e.attributes && Object.keys(e.attributes).length) add('attributes', el('pre', { class: 'attrs' }, JSON.stringify(e.attributes, null, 2)));
  const actions = el('div', { class: 'actions-row' },
    el('button', { type: 'button', class: 'small context', title: 'The entries before and after this one in the project', onclick: () => showView({ view: 'context', vid: e.id }) }, 'Context'));
  tr.after(el('tr', { class: 'detail' }, el('td', { colSpan: 5 }, dl, actions)));
}

// --- start --------------------------------------------------------------------------------

readURL();
setupForm();
window.addEventListener('scroll', maybeMore, { passive: true });
window.addEventListener('resize', maybeMore);
start();
