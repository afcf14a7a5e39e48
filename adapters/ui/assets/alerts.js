// Alert rules: a project's rules listed with their state and last evaluation (GET /alerts),
// each one's history on demand (GET /alerts/{id}/history), and a rule made from the search in
// view (POST /alerts): its query, and the width of its range as the window. Every value is set
// as text.
import { ApiError, getJSON, sendJSON } from './api.js';

export function setupAlerts({ $, el, state, rangeSeconds, fmtTime }) {
  const menu = $('alerts');
  const say = (text, ok = false) => {
    $('alerts-msg').textContent = text;
    $('alerts-msg').classList.toggle('ok', ok);
  };

  // listed counts the lists asked for: only the answer to the latest is shown, so a slower
  // answer to an earlier one (a rule's state before it fired) never replaces it, and an answer
  // that comes after the menu closed is dropped.
  let listed = 0;
  async function refresh() {
    if (!state.project) return;
    const mine = ++listed;
    try {
      const { body } = await getJSON('/alerts?' + new URLSearchParams({ project_id: state.project }));
      if (mine !== listed || !menu.open) return;
      $('alerts-list').replaceChildren(...body.map(item));
      if (body.length === 0) $('alerts-list').append(el('li', { class: 'hint' }, 'No alert rules in this project yet.'));
    } catch (err) {
      say(err instanceof ApiError ? err.message : 'Could not list the alert rules.');
    }
  }

  function item(a) {
    const last = a.last_evaluation
      ? `${a.last_evaluation.count} at ${fmtTime(a.last_evaluation.time)}`
      : 'not evaluated yet';
    const history = el('ol', { class: 'alert-history', reversed: true });
    const li = el('li', { class: 'alert-item' },
      el('span', { class: 'alert-name' }, a.name),
      el('span', { class: 'alert-state state-' + a.state }, a.state),
      el('code', { class: 'saved-query' }, `${a.query ?? '(saved search)'} ${a.condition.op} ${a.condition.threshold} in ${a.window_seconds} s`),
      el('span', { class: 'hint alert-last' }, 'last: ' + last),
      el('button', { type: 'button', class: 'small alert-history-toggle', onclick: () => showHistory(a, history) }, 'History'),
      el('button', { type: 'button', class: 'small alert-delete', onclick: () => remove(a) }, 'Delete'),
      history);
    li.dataset.id = a.id;
    li.dataset.state = a.state;
    return li;
  }

  async function showHistory(a, list) {
    if (list.childElementCount > 0) { list.replaceChildren(); return; }
    try {
      const { body } = await getJSON('/alerts/' + encodeURIComponent(a.id) + '/history');
      list.replaceChildren(...body.map((t) => el('li', { class: 'alert-transition' },
        `${fmtTime(t.time)}: ${t.from} → ${t.to}, ${t.count} in [${fmtTime(t.window_start)}, ${fmtTime(t.window_end)})`)));
      if (body.length === 0) list.append(el('li', { class: 'hint' }, 'No transition yet.'));
    } catch (err) {
      say(err instanceof ApiError ? err.message : 'Could not read the history.');
    }
  }

  async function remove(a) {
    say('');
    try {
      await sendJSON('DELETE', '/alerts/' + encodeURIComponent(a.id));
      say(`Deleted “${a.name}”.`, true);
    } catch (err) {
      say(err instanceof ApiError ? err.message : 'Could not delete the rule.');
    }
    refresh();
  }

  $('alerts-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const name = $('alert-name').value.trim();
    const url = $('alert-url').value.trim();
    if (!name || !url) { say('Give the rule a name and a target URL.'); return; }
    say('');
    const windowSeconds = Math.min(604800, rangeSeconds());
    try {
      await sendJSON('POST', '/alerts', {
        project_id: state.project, name, query: state.query, window_seconds: windowSeconds,
        interval_seconds: Math.max(10, Math.min(86400, Number($('alert-interval').value) || 60)),
        condition: { op: $('alert-op').value, threshold: Math.max(0, Number($('alert-threshold').value) || 0) },
        targets: [{ type: $('alert-type').value, url }],
      });
      $('alert-name').value = '';
      say(`Created “${name}”: it counts this query over the last ${windowSeconds} s.`, true);
    } catch (err) {
      const detail = err instanceof ApiError && err.errors.length ? ' (' + err.errors.map((f) => `${f.pointer || f.parameter} ${f.detail}`).join('; ') + ')' : '';
      say((err instanceof ApiError ? err.message : 'Could not create the rule.') + detail);
    }
    refresh();
  });
  menu.addEventListener('toggle', () => {
    if (menu.open) { say(''); refresh(); } else { listed++; $('alerts-list').replaceChildren(); }
  });
}
