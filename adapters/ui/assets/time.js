// Time as the page writes it, everywhere: 24-hour, ISO-like dates (2026-11-26 21:04:53.122), in
// UTC or the browser's zone, as the user chose (remembered in localStorage), with the zone said.
const KEY = 'obsvc.tz';

export function tzMode() { return localStorage.getItem(KEY) === 'utc' ? 'utc' : 'local'; }
export function setTzMode(m) { localStorage.setItem(KEY, m === 'utc' ? 'utc' : 'local'); }

const pad = (n, w = 2) => String(n).padStart(w, '0');

function parts(ms) {
  const d = new Date(ms);
  if (tzMode() === 'utc') {
    return { Y: d.getUTCFullYear(), M: d.getUTCMonth() + 1, D: d.getUTCDate(), h: d.getUTCHours(), m: d.getUTCMinutes(), s: d.getUTCSeconds(), ms: d.getUTCMilliseconds() };
  }
  return { Y: d.getFullYear(), M: d.getMonth() + 1, D: d.getDate(), h: d.getHours(), m: d.getMinutes(), s: d.getSeconds(), ms: d.getMilliseconds() };
}

export function fmtDate(ms) { const p = parts(ms); return `${p.Y}-${pad(p.M)}-${pad(p.D)}`; }
export function fmtClock(ms, seconds = true) { const p = parts(ms); return `${pad(p.h)}:${pad(p.m)}` + (seconds ? `:${pad(p.s)}` : ''); }

// fmtTime writes an instant in full, to the millisecond when ms is set.
export function fmtTime(ms, withMs = true) {
  return `${fmtDate(ms)} ${fmtClock(ms)}` + (withMs ? '.' + pad(parts(ms).ms, 3) : '');
}

// zoneLabel names the zone times are written in: UTC, or the browser's offset and zone name.
export function zoneLabel(ms = Date.now()) {
  if (tzMode() === 'utc') return 'UTC';
  const off = -new Date(ms).getTimezoneOffset();
  const name = Intl.DateTimeFormat().resolvedOptions().timeZone || '';
  const o = off === 0 ? 'UTC' : `UTC${off < 0 ? '−' : '+'}${pad(Math.floor(Math.abs(off) / 60))}:${pad(Math.abs(off) % 60)}`;
  return name && name !== 'UTC' && name !== 'Etc/UTC' ? `${o} ${name}` : o;
}

// toInput writes an instant for the From and To fields (text, in the page's one format rather
// than the browser's own date picker, which follows its locale), in the chosen zone.
export function toInput(ms) { return `${fmtDate(ms)} ${fmtClock(ms)}`; }

// fromInput reads such a field back, in the chosen zone (NaN when it is not a time).
export function fromInput(v) {
  const m = /^\s*(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2})(:\d{2})?\s*$/.exec(v || '');
  if (!m) return NaN;
  const iso = `${m[1]}T${m[2]}${m[3] || ':00'}`;
  return Date.parse(tzMode() === 'utc' ? iso + 'Z' : iso);
}
