// The histogram: GET /logs/stats drawn as bars stacked by level with uPlot. The counts are the
// API's own; stacking only adds them up for drawing. Dragging across the chart or clicking a bar
// calls onZoom with the chosen range in Unix milliseconds.
import uPlot from './vendor/uplot/uPlot.esm.js';
import { fmtClock, fmtDate, fmtTime, tzMode } from './time.js';

const COLORS = { trace: '#9aa3af', debug: '#6b7d99', info: '#2f7ed8', warn: '#e39b1b', error: '#d64541', fatal: '#7d3c98' };
const ORDER = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'];
const OTHER = ['#2a9d8f', '#c2185b', '#9e9d24', '#00838f', '#8d6e63', '#5e35b1', '#ef6c00', '#546e7a', '#43a047', '#f06292', '#0097a7', '#a1887f'];

// colorFor is a series' colour: a level's own, or for any other value one picked from its name,
// so a value keeps its colour whatever else the range holds and however the series are ordered.
export function colorFor(value, other) {
  if (other) return '#b0b7c3';
  if (value === null || value === undefined) return '#cfd4dc';
  if (COLORS[value]) return COLORS[value];
  let h = 2166136261;
  for (const c of String(value)) h = Math.imul(h ^ c.codePointAt(0), 16777619);
  return OTHER[(h >>> 0) % OTHER.length];
}

// stepFor picks a bucket width for a range: a round width giving at most max buckets (about 120
// on a wide screen, fewer on a phone so bars stay readable), never under the API's minimum of
// one second. From an hour up it is whole minutes: GET /logs/stats answers those from its
// per-minute counts instead of reading every entry (an hour of 1,000,000 entries in 30 s bars
// was counted 1.6 s into the page's load, in minutes by 0.2 s), and 60 bars still show an hour's
// shape.
export function stepFor(ms, max = 120) {
  const steps = [1e3, 5e3, 10e3, 30e3, 60e3, 120e3, 300e3, 600e3, 900e3, 1800e3, 3600e3, 7200e3, 10800e3, 21600e3, 43200e3, 86400e3];
  const least = ms >= 3600e3 ? 60e3 : 1e3;
  for (const s of steps) if (s >= least && ms / s <= max) return s;
  return Math.ceil(ms / max / 86400e3) * 86400e3;
}

// themeColors are the chart's axis and grid colours from the page's current theme.
function themeColors() {
  const cs = getComputedStyle(document.documentElement);
  return { fg: cs.getPropertyValue('--muted').trim() || '#5b6474', grid: cs.getPropertyValue('--line').trim() || '#d9dde4' };
}

export class Histogram {
  constructor(el, onZoom) {
    this.el = el;
    this.onZoom = onZoom;
    this.plot = null;
    this.stats = null;
    this.hidden = new Set(); // the series the legend hides, by label key; kept across redraws
    new ResizeObserver(() => this.resize()).observe(el);
  }

  size() { return { width: Math.max(200, this.el.clientWidth), height: this.el.clientWidth < 500 ? 140 : 180 }; }

  resize() { if (this.plot) this.plot.setSize(this.size()); }

  clear() {
    if (this.plot) { this.plot.destroy(); this.plot = null; }
    this.stats = null;
    this.el.replaceChildren();
  }

  // draw renders a GET /logs/stats answer (by=level).
  draw(stats) {
    this.clear();
    this.stats = stats;
    const n = stats.buckets.length;
    this.el.dataset.buckets = String(n);
    this.el.dataset.step = String(stats.step);
    if (n === 0) return;
    const series = [...stats.series].sort((a, b) => rank(a.value) - rank(b.value));
    const keys = series.map(key);
    const xs = stats.buckets.map((b) => b / 1000);
    const end = (stats.buckets[n - 1] + stats.step) / 1000;
    // Stacked bars: each drawn series is its own counts plus those of every shown series below
    // it, drawn tallest first so the smaller ones cover it. A hidden series adds nothing, so
    // every band shown is its own series' counts, in its own colour.
    const stack = () => {
      const cum = [];
      let acc = new Array(n).fill(0);
      for (let i = series.length - 1; i >= 0; i--) {
        if (!this.hidden.has(keys[i])) acc = acc.map((v, j) => v + series[i].counts[j]);
        cum[i] = this.hidden.has(keys[i]) ? new Array(n).fill(null) : acc;
      }
      // What is drawn, for anyone checking it: each shown series' band and colour.
      this.el.dataset.bands = JSON.stringify(series.flatMap((s, i) => this.hidden.has(keys[i]) ? []
        : [{ series: keys[i], color: colorFor(s.value, s.other), counts: s.counts }]));
      return [xs, ...cum];
    };
    const theme = themeColors();
    const opts = {
      ...this.size(),
      legend: { show: true, live: false },
      cursor: { drag: { x: true, y: false, setScale: false }, points: { show: false } },
      scales: { x: { time: true, range: () => [xs[0], end] }, y: { range: (u, min, max) => [0, Math.max(1, Math.ceil(max * 1.1))] } },
      ...(tzMode() === 'utc' ? { tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC') } : {}),
      axes: [{ stroke: theme.fg, grid: { stroke: theme.grid }, ticks: { stroke: theme.grid }, values: (u, splits, ax, space, incr) => this.xTicks(splits, incr) },
        { stroke: theme.fg, grid: { stroke: theme.grid }, ticks: { stroke: theme.grid }, size: 50, values: (u, splits) => this.yTicks(splits), incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7, 1e8, 1e9] }],
      series: [{}].concat(series.map((s, i) => {
        const color = colorFor(s.value, s.other);
        return {
          label: `${keys[i]} ${s.total}`,
          show: !this.hidden.has(keys[i]),
          stroke: color,
          fill: color,
          width: 0,
          paths: uPlot.paths.bars({ size: [1, Infinity], gap: 1, align: 1 }),
          points: { show: false },
        };
      })),
      hooks: {
        setCursor: [(u) => this.tip(u, series, keys)],
        setSelect: [(u) => {
          if (u.select.width < 3) return;
          const a = Math.round(u.posToVal(u.select.left, 'x') * 1000);
          const b = Math.round(u.posToVal(u.select.left + u.select.width, 'x') * 1000);
          u.setSelect({ left: 0, width: 0, top: 0, height: 0 }, false);
          this.onZoom(Math.max(a, stats.buckets[0]), b);
        }],
        // A legend click shows or hides a series: the stack is rebuilt without it.
        setSeries: [(u, i) => {
          if (i == null || i < 1) return;
          const k = keys[i - 1];
          if (u.series[i].show) this.hidden.delete(k); else this.hidden.add(k);
          u.setData(stack());
        }],
      },
    };
    this.plot = new uPlot(opts, stack(), this.el);
    let down = null;
    this.plot.over.addEventListener('mousedown', (e) => { down = e.clientX; });
    this.plot.over.addEventListener('click', (e) => {
      if (down !== null && Math.abs(e.clientX - down) > 3) return; // a drag, handled above
      const t = this.plot.posToVal(e.offsetX, 'x') * 1000;
      const i = Math.floor((t - stats.buckets[0]) / stats.step);
      if (i < 0 || i >= n) return;
      const from = stats.buckets[i];
      const to = Math.min(i + 1 < n ? stats.buckets[i + 1] : from + stats.step, from + stats.step) - 1;
      this.onZoom(from, to);
    });
  }
}

// key names a series as its legend does.
function key(s) { return s.other ? '(other)' : s.value === null || s.value === undefined ? '(none)' : String(s.value); }

// xTicks writes the time axis in the page's one format: clock times, and the date under the
// first tick and wherever the day changes (dates alone when ticks are days apart).
Histogram.prototype.xTicks = function xTicks(splits, incr) {
  let prev = '';
  const out = splits.map((v) => {
    const ms = v * 1000;
    const day = fmtDate(ms);
    let label = incr >= 86400 ? day : fmtClock(ms, incr < 60);
    if (incr < 86400 && day !== prev) label += '\n' + day;
    prev = day;
    return label;
  });
  this.el.dataset.xticks = JSON.stringify(out);
  return out;
};

// yTicks writes the count axis: whole numbers only (its increments are integers).
Histogram.prototype.yTicks = function yTicks(splits) {
  this.el.dataset.yticks = JSON.stringify(splits);
  return splits.map((v) => v.toLocaleString('en'));
};

// tip shows, over the bar under the cursor, its range and the count of each shown series.
Histogram.prototype.tip = function tip(u, series, keys) {
  const stats = this.stats;
  let box = u.over.querySelector('.hist-tip');
  const left = u.cursor.left;
  const i = left == null || left < 0 || !stats ? -1 : Math.floor((u.posToVal(left, 'x') * 1000 - stats.buckets[0]) / stats.step);
  if (i < 0 || i >= stats.buckets.length) { if (box) box.hidden = true; return; }
  if (!box) { box = document.createElement('div'); box.className = 'hist-tip'; u.over.append(box); }
  const from = stats.buckets[i];
  const to = Math.min(from + stats.step, i + 1 < stats.buckets.length ? stats.buckets[i + 1] : from + stats.step) - 1;
  const head = document.createElement('div');
  head.textContent = `${fmtTime(from, false)} – ${fmtDate(to) === fmtDate(from) ? fmtClock(to) : fmtTime(to, false)}`;
  const rows = [head];
  let sum = 0;
  series.forEach((s, k) => {
    if (this.hidden.has(keys[k])) return;
    sum += s.counts[i];
    const row = document.createElement('div');
    row.className = 'row';
    const sw = document.createElement('span');
    sw.className = 'swatch';
    sw.style.backgroundColor = colorFor(s.value, s.other);
    const name = document.createElement('span');
    name.append(sw, ' ' + keys[k]);
    const n = document.createElement('span');
    n.textContent = s.counts[i].toLocaleString('en');
    row.append(name, n);
    rows.push(row);
  });
  const total = document.createElement('div');
  total.className = 'row';
  total.textContent = `total ${sum.toLocaleString('en')}`;
  rows.push(total);
  box.replaceChildren(...rows);
  box.dataset.index = String(i);
  box.hidden = false;
  const w = box.offsetWidth;
  box.style.left = `${left + 12 + w > u.over.clientWidth ? Math.max(0, left - 12 - w) : left + 12}px`;
  box.style.top = '4px';
};

function rank(level) {
  const i = ORDER.indexOf(level);
  return i < 0 ? ORDER.length : i;
}
