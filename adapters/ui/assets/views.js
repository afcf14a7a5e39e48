// Two views that take the list's place: the context around one entry (GET /logs/context) and
// every entry of one trace (GET /logs?trace_id=, paged to the end). Each is a history entry of
// the page (view= in the URL), so Back returns to the list. Every value is shown as text.
import { ApiError, getJSON, nextLink } from './api.js';
import { quoteValue } from './query.js';
import { fmtTime } from './time.js';

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];
const FIRST = 50; // entries each side of a context at first
const MOST = 1000; // the most GET /logs/context answers on a side
const TRACE_PAGE = 1000;
const TRACE_MOST = 100000; // a trace view stops here and says so
// Attribute keys that may name an entry's parent span, as loggers and OpenTelemetry bridges write it.
const PARENT_KEYS = ['parent_span_id', 'parentSpanId', 'parent_id', 'otel.parent_span_id', 'otel.parent_id', 'parent.span_id', 'span.parent_id'];

export function setupViews({ $, el, state, show }) {
  let seq = 0; // the current view load; older answers are dropped
  let abort = null;
  let sides = { before: FIRST, after: FIRST };
  let ctxKey = ''; // the context the counts belong to

  // The list with the filters it had, as a new history entry (the browser's Back also returns).
  $('view-back').addEventListener('click', () => show({ view: '' }));

  function begin() {
    if (abort) abort.abort();
    abort = new AbortController();
    return ++seq;
  }

  function failed(s, err) {
    if (s !== seq || (err && err.name === 'AbortError')) return;
    $('view-status').textContent = '';
    $('view-rows').replaceChildren();
    $('view-below').replaceChildren(el('p', { class: 'view-error', role: 'alert' },
      err instanceof ApiError ? err.message : 'Could not reach the server: ' + (err && err.message)));
  }

  function row(e, depth) {
    const span = el('td', { class: 'span', title: e.span_id || '' });
    if (depth !== undefined) {
      const pad = el('span', { class: 'indent' });
      pad.style.width = `${Math.min(depth, 8)}em`;
      span.append(pad);
    }
    span.append(e.span_id || '');
    const tr = el('tr', { class: 'ventry' },
      el('td', {}, el('time', { dateTime: new Date(e.time).toISOString() }, fmtTime(e.time))),
      el('td', { class: 'lvl ' + (LEVELS.includes(e.level) ? 'lvl-' + e.level : 'lvl-other') }, e.level),
      el('td', { title: e.subject || '' }, e.subject || ''),
      span,
      el('td', { class: 'msg' }, e.message,
        e.trace_id && state.view !== 'trace' ? el('span', { class: 'hint' }, ' · trace ',
          el('button', { type: 'button', class: 'linkish trace-link', title: 'Every entry of this trace', onclick: () => show({ view: 'trace', vtrace: e.trace_id }) }, e.trace_id)) : null));
    tr.dataset.id = e.id;
    tr.dataset.time = String(e.time);
    if (depth !== undefined) tr.dataset.depth = String(depth);
    return tr;
  }

  // --- context ------------------------------------------------------------------------------

  function narrowQuery(entry) {
    if (state.vnarrow === 'subject' && entry && entry.subject) return 'subject:' + quoteValue(entry.subject);
    if (state.vnarrow === 'trace' && entry && entry.trace_id) return 'trace_id:' + entry.trace_id;
    return '';
  }

  let ctxEntry = null; // the entry of the context in view, once read

  // loadContext shows the context; after "load more", the row that was first (more before) or last
  // (more after) stays where it was on the screen, so the reader goes on from it.
  async function loadContext(more) {
    const key = state.project + '\n' + state.vid + '\n' + state.vnarrow;
    if (key !== ctxKey) { sides = { before: FIRST, after: FIRST }; ctxKey = key; ctxEntry = null; more = ''; }
    const s = begin();
    $('view-name').textContent = 'Context of one entry';
    $('view-status').textContent = '· loading…';
    try {
      // The narrowing needs the entry's subject or trace: read it first when it is not known yet.
      if (state.vnarrow && !ctxEntry) {
        const { body } = await getJSON('/logs/context?' + new URLSearchParams({ project_id: state.project, id: state.vid, before: 0, after: 0 }), abort.signal);
        if (s !== seq) return;
        ctxEntry = body.entry;
      }
      const p = new URLSearchParams({ project_id: state.project, id: state.vid, before: sides.before, after: sides.after });
      const nq = narrowQuery(ctxEntry);
      if (nq) p.set('query', nq);
      const url = '/logs/context?' + p;
      const { body } = await getJSON(url, abort.signal);
      if (s !== seq) return;
      ctxEntry = body.entry;
      const anchor = more ? document.querySelector(`#view-rows tr.ventry:${more === 'before' ? 'first' : 'last'}-child`) : null;
      const anchorID = anchor ? anchor.dataset.id : '';
      const top = anchor ? anchor.getBoundingClientRect().top : 0;
      tools(body.entry);
      const rows = [...body.before.map((e) => row(e)), row(body.entry), ...body.after.map((e) => row(e))];
      const mine = rows[body.before.length];
      mine.classList.add('ctx-entry');
      mine.setAttribute('aria-current', 'true');
      $('view-rows').replaceChildren(...rows);
      $('view-rows').dataset.query = url;
      $('view-above').replaceChildren(side('before', body.before.length));
      $('view-below').replaceChildren(side('after', body.after.length));
      $('view-status').textContent = `· ${body.before.length.toLocaleString('en')} before, ${body.after.length.toLocaleString('en')} after` + (nq ? ` · neighbours where ${nq}` : '');
      const kept = anchorID && rows.find((r) => r.dataset.id === anchorID);
      if (kept) window.scrollBy(0, kept.getBoundingClientRect().top - top);
      else mine.scrollIntoView({ block: 'center' });
    } catch (err) {
      failed(s, err);
    }
  }

  // side is the "load more" of one side, or why there is no more.
  function side(which, got) {
    const asked = sides[which];
    if (got < asked) return el('span', { class: 'hint' }, which === 'before' ? 'The first entry of the project.' : 'The last entry of the project, for now.');
    if (asked >= MOST) return el('span', { class: 'hint' }, `${MOST.toLocaleString('en')} entries on this side at most.`);
    return el('button', { type: 'button', id: 'more-' + which, class: 'small', onclick: () => { sides[which] = Math.min(MOST, asked * 2); loadContext(which); } },
      which === 'before' ? 'Load more before' : 'Load more after');
  }

  function tools(entry) {
    const choice = (value, label, disabled) => el('label', {},
      el('input', { type: 'radio', name: 'vnarrow', value, checked: state.vnarrow === value, disabled,
        onchange: () => { show({ view: 'context', vid: state.vid, vnarrow: value }); } }), ' ' + label);
    $('view-tools').replaceChildren(el('span', {}, 'Neighbours:'),
      choice('', 'all of the project', false),
      choice('subject', entry.subject ? `the same subject (${entry.subject})` : 'the same subject (it has none)', !entry.subject),
      choice('trace', entry.trace_id ? 'the same trace' : 'the same trace (it has none)', !entry.trace_id));
  }

  // --- trace --------------------------------------------------------------------------------

  async function loadTrace() {
    const s = begin();
    $('view-name').textContent = 'Trace ' + state.vtrace;
    $('view-tools').replaceChildren();
    $('view-above').replaceChildren();
    $('view-rows').replaceChildren();
    $('view-below').textContent = 'Loading…';
    $('view-status').textContent = '';
    const all = [];
    let url = '/logs?' + new URLSearchParams({ project_id: state.project, trace_id: state.vtrace, order: 'asc', limit: TRACE_PAGE });
    $('view-rows').dataset.query = url;
    try {
      while (url && all.length < TRACE_MOST) {
        const { body, resp } = await getJSON(url, abort.signal);
        if (s !== seq) return;
        all.push(...body);
        $('view-status').textContent = `· ${all.length.toLocaleString('en')} entries…`;
        url = nextLink(resp);
      }
      const depths = traceDepths(all);
      $('view-rows').replaceChildren(...all.map((e) => row(e, depths.get(e))));
      $('view-rows').dataset.indent = depths.how;
      $('view-status').textContent = `· ${all.length.toLocaleString('en')} entries, oldest first` +
        (depths.how === 'parents' ? ', spans indented under their parents' : depths.how === 'spans' ? ', grouped by span (no parent spans recorded)' : '');
      $('view-below').textContent = url ? `The first ${all.length.toLocaleString('en')} entries only.` : (all.length ? 'The end of the trace.' : 'No entry of this project has this trace id.');
    } catch (err) {
      failed(s, err);
    }
  }

  return {
    // render shows the view the state names, or the list (returning false).
    render() {
      const on = state.view === 'context' ? !!state.vid : state.view === 'trace' ? /^[0-9a-fA-F]{32}$/.test(state.vtrace) : false;
      $('view').hidden = !on;
      if (on) document.querySelector('main').dataset.view = state.view; else delete document.querySelector('main').dataset.view;
      if (!on) { if (abort) abort.abort(); seq++; return false; }
      if (state.view === 'context') loadContext(false); else loadTrace();
      return true;
    },
  };
}

function parentOf(e) {
  const a = e.attributes;
  if (!a || typeof a !== 'object') return '';
  for (const k of PARENT_KEYS) if (typeof a[k] === 'string' && a[k]) return a[k].toLowerCase();
  return '';
}

// traceDepths gives each entry its indentation: a span's depth under its parents where the
// entries name them (an attribute such as parent_span_id); where none does, 1 for an entry with
// a span and 0 for one without, and the spans' entries are listed as they come (oldest first).
function traceDepths(entries) {
  const parent = new Map();
  for (const e of entries) {
    const p = parentOf(e);
    if (e.span_id && p) parent.set(e.span_id.toLowerCase(), p);
  }
  const d = new Map();
  if (parent.size === 0) {
    for (const e of entries) d.set(e, e.span_id ? 1 : 0);
    d.how = entries.some((e) => e.span_id) ? 'spans' : 'none';
    return d;
  }
  const depthOf = (span) => {
    let n = 0;
    const seen = new Set();
    for (let s = span; parent.has(s) && !seen.has(s) && n < 64; s = parent.get(s)) { seen.add(s); n++; }
    return n;
  };
  for (const e of entries) d.set(e, e.span_id ? depthOf(e.span_id.toLowerCase()) : 0);
  d.how = 'parents';
  return d;
}
