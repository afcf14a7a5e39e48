// The query bar: the `query` parameter of the query language, kept in the page's URL. Enter runs
// it, Escape clears it, "/" focuses it from anywhere but a field. While typing, it offers the
// field names (the entry's own and the attribute keys of GET /logs/fields) and, after "field:",
// the values of that field (GET /logs/facets), chosen with the arrows and Enter or Tab. Every
// suggestion is set as text.
import { getJSON } from './api.js';

const OWN = ['level', 'subject', 'user_id', 'trace_id', 'span_id', 'message'];
const KEYWORDS = new Set(['AND', 'OR', 'NOT']);

// quoteValue writes a value as the grammar reads it: bare when it is a plain word, else quoted
// with its quotes and backslashes escaped.
export function quoteValue(v) {
  const s = String(v);
  if (s !== '' && !/[\s():"[\]{}\\*]/.test(s) && !/^[-><]/.test(s) && !KEYWORDS.has(s)) return s;
  return '"' + s.replace(/[\\"]/g, '\\$&') + '"';
}

// tokenAt returns the start and end of the term the caret is in: after the last space or
// parenthesis before it, and any leading "-".
function tokenAt(text, caret) {
  let a = caret;
  while (a > 0 && !/[\s()]/.test(text[a - 1])) a--;
  if (text[a] === '-') a++;
  let b = caret;
  while (b < text.length && !/[\s()]/.test(text[b])) b++;
  return [a, b];
}

export function setupQueryBar({ $, el, state, range, query, apply }) {
  const input = $('query');
  const list = $('suggest');
  let items = []; // { label, insert }
  let active = -1;
  let seq = 0;
  let timer = 0;
  let fields = { key: '', names: [] }; // the attribute keys, for one project and range

  const close = () => { items = []; active = -1; list.replaceChildren(); list.hidden = true; input.setAttribute('aria-expanded', 'false'); };
  const render = () => {
    list.replaceChildren(...items.map((it, i) => {
      const li = el('li', { role: 'option', id: 'suggest-' + i, class: i === active ? 'active' : '', 'aria-selected': String(i === active) }, it.label);
      li.dataset.insert = it.insert;
      li.addEventListener('mousedown', (e) => { e.preventDefault(); choose(i); });
      return li;
    }));
    list.hidden = items.length === 0;
    input.setAttribute('aria-expanded', String(items.length > 0));
    if (active >= 0) input.setAttribute('aria-activedescendant', 'suggest-' + active); else input.removeAttribute('aria-activedescendant');
  };
  const choose = (i) => {
    const it = items[i];
    const [a, b] = tokenAt(input.value, input.selectionStart);
    input.value = input.value.slice(0, a) + it.insert + input.value.slice(b);
    const caret = a + it.insert.length;
    input.setSelectionRange(caret, caret);
    close();
    if (it.insert.endsWith(':')) suggest(); // a field chosen: its values next
  };

  // The page's filters and the query last run (not the text being typed), over the range in view.
  const scope = (extra) => {
    const [s, e] = range();
    return query({ start_time: s, end_time: e, ...extra });
  };

  async function attributeKeys() {
    const [s] = range();
    const key = state.project + '|' + state.query + '|' + state.range + '|' + (state.range === 'abs' ? state.from + '-' + state.to : Math.floor(s / 60e3));
    if (fields.key !== key) {
      const { body } = await getJSON('/logs/fields?' + scope());
      fields = { key, names: body.map((f) => f.field) };
    }
    return fields.names;
  }

  async function suggest() {
    const my = ++seq;
    const text = input.value;
    const [a, b] = tokenAt(text, input.selectionStart);
    const tok = text.slice(a, b);
    if (!state.project) return close();
    try {
      const colon = tok.indexOf(':');
      if (colon > 0) {
        const field = tok.slice(0, colon);
        const prefix = tok.slice(colon + 1).replace(/^"/, '').toLowerCase();
        const { body } = await getJSON('/logs/facets?' + scope({ field, limit: 20 }));
        if (my !== seq) return;
        const values = (body.facets[0] ? body.facets[0].values : []).filter((v) => v.value !== null && typeof v.value !== 'object');
        items = values.filter((v) => String(v.value).toLowerCase().startsWith(prefix))
          .map((v) => ({ label: `${v.value} (${v.count.toLocaleString('en')})`, insert: field + ':' + quoteValue(v.value) + ' ' }));
      } else {
        if (tok === '') return close();
        const names = [...OWN, ...(await attributeKeys())];
        if (my !== seq) return;
        const low = tok.toLowerCase();
        items = [...new Set(names)].filter((f) => f.toLowerCase().startsWith(low) && f !== tok).slice(0, 20)
          .map((f) => ({ label: f, insert: f + ':' }));
      }
      active = items.length ? 0 : -1;
      render();
    } catch {
      if (my === seq) close(); // no suggestions; the query itself reports its own errors
    }
  }

  // Typing drops the suggestions for what was typed before (and any answer still on its way),
  // so Enter never picks a stale one.
  input.addEventListener('input', () => { clearTimeout(timer); seq++; close(); timer = setTimeout(suggest, 120); });
  input.addEventListener('blur', () => { clearTimeout(timer); seq++; close(); });
  input.addEventListener('keydown', (e) => {
    const open = items.length > 0;
    if (open && (e.key === 'ArrowDown' || e.key === 'ArrowUp')) {
      e.preventDefault();
      active = (active + (e.key === 'ArrowDown' ? 1 : items.length - 1)) % items.length;
      render();
    } else if (open && active >= 0 && (e.key === 'Enter' || e.key === 'Tab')) {
      e.preventDefault();
      choose(active);
    } else if (e.key === 'Enter') {
      e.preventDefault();
      clearTimeout(timer);
      seq++;
      close();
      apply();
    } else if (e.key === 'Escape') {
      e.preventDefault();
      if (open) { seq++; close(); return; }
      input.value = '';
      apply();
    }
  });
  document.addEventListener('keydown', (e) => {
    if (e.key !== '/' || e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    if (t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement || t instanceof HTMLSelectElement || (t && t.isContentEditable)) return;
    e.preventDefault();
    input.focus();
  });
}
