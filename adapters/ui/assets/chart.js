// The histogram: GET /logs/stats drawn as bars stacked by level with uPlot. The counts are the
// API's own; stacking only adds them up for drawing. Dragging across the chart or clicking a bar
// calls onZoom with the chosen range in Unix milliseconds.
import uPlot from './vendor/uplot/uPlot.esm.js';

const COLORS = { trace: '#9aa3af', debug: '#6b7d99', info: '#2f7ed8', warn: '#e39b1b', error: '#d64541', fatal: '#7d3c98' };
const ORDER = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'];
const OTHER = ['#2a9d8f', '#8d6e63', '#c2185b', '#546e7a', '#9e9d24'];

// stepFor picks a bucket width for a range: a round width giving at most about 120 buckets, and
// never under the API's minimum of one second.
export function stepFor(ms) {
  const steps = [1e3, 5e3, 10e3, 30e3, 60e3, 120e3, 300e3, 600e3, 900e3, 1800e3, 3600e3, 7200e3, 10800e3, 21600e3, 43200e3, 86400e3];
  for (const s of steps) if (ms / s <= 120) return s;
  return Math.ceil(ms / 120 / 86400e3) * 86400e3;
}

export class Histogram {
  constructor(el, onZoom) {
    this.el = el;
    this.onZoom = onZoom;
    this.plot = null;
    this.stats = null;
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
    // Stacked bars: each drawn series is its level plus every level below it, drawn tallest
    // first so the smaller ones cover it.
    const cum = [];
    let acc = new Array(n).fill(0);
    for (let i = series.length - 1; i >= 0; i--) {
      acc = acc.map((v, j) => v + series[i].counts[j]);
      cum[i] = acc;
    }
    const xs = stats.buckets.map((b) => b / 1000);
    const end = (stats.buckets[n - 1] + stats.step) / 1000;
    let other = 0;
    const opts = {
      ...this.size(),
      legend: { show: true, live: false },
      cursor: { drag: { x: true, y: false, setScale: false }, points: { show: false } },
      scales: { x: { time: true, range: () => [xs[0], end] }, y: { range: (u, min, max) => [0, Math.max(1, Math.ceil(max * 1.1))] } },
      axes: [{}, { size: 50 }],
      series: [{}].concat(series.map((s) => {
        const color = COLORS[s.value] || OTHER[other++ % OTHER.length];
        return {
          label: `${s.other ? '(other)' : s.value || '(none)'} ${s.total}`,
          stroke: color,
          fill: color,
          width: 0,
          paths: uPlot.paths.bars({ size: [1, Infinity], gap: 1, align: 1 }),
          points: { show: false },
        };
      })),
      hooks: {
        setSelect: [(u) => {
          if (u.select.width < 3) return;
          const a = Math.round(u.posToVal(u.select.left, 'x') * 1000);
          const b = Math.round(u.posToVal(u.select.left + u.select.width, 'x') * 1000);
          u.setSelect({ left: 0, width: 0, top: 0, height: 0 }, false);
          this.onZoom(Math.max(a, stats.buckets[0]), b);
        }],
      },
    };
    this.plot = new uPlot(opts, [xs, ...cum], this.el);
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

function rank(level) {
  const i = ORDER.indexOf(level);
  return i < 0 ? ORDER.length : i;
}
