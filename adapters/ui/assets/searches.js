// Saved searches: the query and range in view kept on the server under a name, per project
// (POST /searches), listed (GET /searches), opened and deleted from a menu. Names and queries
// are set as text.
import { ApiError, getJSON, sendJSON } from './api.js';

export function setupSearches({ $, el, state, rangeSeconds, open }) {
  const menu = $('saved');
  const say = (text, ok = false) => {
    $('saved-msg').textContent = text;
    $('saved-msg').classList.toggle('ok', ok);
  };

  async function refresh() {
    if (!state.project) return;
    try {
      const { body } = await getJSON('/searches?' + new URLSearchParams({ project_id: state.project }));
      $('saved-list').replaceChildren(...body.map(item));
      if (body.length === 0) $('saved-list').append(el('li', { class: 'hint' }, 'No saved searches in this project yet.'));
    } catch (err) {
      say(err instanceof ApiError ? err.message : 'Could not list the saved searches.');
    }
  }

  function item(s) {
    const li = el('li', { class: 'saved-item' },
      el('button', { type: 'button', class: 'linkish saved-open', title: 'Open this search', onclick: () => { menu.open = false; open(s); } }, s.name),
      el('code', { class: 'saved-query' }, s.query || '(every entry)'),
      el('span', { class: 'hint' }, describe(s.range_seconds)),
      el('button', { type: 'button', class: 'small saved-delete', title: 'Delete this search', onclick: () => remove(s) }, 'Delete'));
    li.dataset.id = s.id;
    li.dataset.name = s.name;
    return li;
  }

  async function remove(s) {
    say('');
    try {
      await sendJSON('DELETE', '/searches/' + encodeURIComponent(s.id));
      say(`Deleted “${s.name}”.`, true);
    } catch (err) {
      say(err instanceof ApiError ? err.message : 'Could not delete the search.');
    }
    refresh();
  }

  $('saved-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const name = $('saved-name').value.trim();
    if (!name) { say('Give the search a name.'); return; }
    say('');
    try {
      await sendJSON('POST', '/searches', { project_id: state.project, name, query: state.query, range_seconds: rangeSeconds() });
      $('saved-name').value = '';
      say(`Saved “${name}”.`, true);
    } catch (err) {
      say(err instanceof ApiError && err.status === 409
        ? `A search named “${name}” already exists in this project: choose another name, or delete that one.`
        : err instanceof ApiError ? err.message : 'Could not save the search.');
    }
    refresh();
  });
  // The list is read afresh each time the menu opens (another tab may have changed it).
  menu.addEventListener('toggle', () => {
    if (menu.open) { say(''); refresh(); } else $('saved-list').replaceChildren();
  });
}

function describe(seconds) {
  for (const [n, unit] of [[86400, 'day'], [3600, 'hour'], [60, 'minute']]) {
    if (seconds % n === 0) { const k = seconds / n; return `last ${k} ${unit}${k === 1 ? '' : 's'}`; }
  }
  return `last ${seconds} s`;
}
