// The console's number formats and charts (docs/console.md): small SVG
// drawn by hand, no library. Loaded before console.js, whose globals (st,
// $, KEEP_SAMPLES, TREND_SAMPLES) the charts use when called.
'use strict';

const num = (x) => Number(x || 0);
const fmt = (x) => num(x).toLocaleString('en-US');

function esc(text) {
  return String(text).replace(/[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}

function bytes(x) {
  x = num(x);
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (x >= 1024 && i < units.length - 1) { x /= 1024; i++; }
  return (i === 0 ? x : x.toFixed(1)) + ' ' + units[i];
}

function duration(ms) {
  ms = num(ms);
  if (ms < 1000) return ms + ' ms';
  let s = Math.floor(ms / 1000);
  if (s < 60) return (ms / 1000).toFixed(1) + ' s';
  const d = Math.floor(s / 86400); s -= d * 86400;
  const h = Math.floor(s / 3600); s -= h * 3600;
  const m = Math.floor(s / 60); s -= m * 60;
  return (d ? d + 'd ' : '') + (d || h ? h + 'h ' : '') + m + 'm ' + s + 's';
}

function rate(x) {
  x = num(x);
  return x >= 100 ? fmt(Math.round(x)) : x.toFixed(1);
}

function cell(value, text, cls) {
  return `<td class="${cls || 'num'}" data-value="${esc(value)}">${text === undefined ? fmt(value) : text}</td>`;
}

// -- charts ---------------------------------------------------------------------

function niceMax(x) {
  if (x <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(x)));
  for (const m of [1, 2, 5, 10]) if (m * p >= x) return m * p;
  return 10 * p;
}

// Sizes `svg`'s coordinates to its width on the page (text unstretched)
// and returns that width.
function fit(svg, height) {
  const W = Math.max(320, Math.round(svg.getBoundingClientRect().width || 640));
  svg.setAttribute('viewBox', `0 0 ${W} ${height}`);
  return W;
}

function drawRates() {
  const H = 180, L = 48, B = 20, W = fit($('#rates'), H);
  const xs = st.samples;
  const max = niceMax(Math.max(1, ...xs.map((s) => Math.max(s.pub, s.del))));
  const x = (i) => L + (W - L - 4) * (KEEP_SAMPLES - xs.length + i) / (KEEP_SAMPLES - 1);
  const y = (v) => 4 + (H - B - 4) * (1 - v / max);
  const line = (key) => xs.map((s, i) => `${x(i).toFixed(1)},${y(s[key]).toFixed(1)}`).join(' ');
  let svg = '';
  for (const f of [0, 0.5, 1]) {
    svg += `<line class="grid" x1="${L}" x2="${W}" y1="${y(max * f)}" y2="${y(max * f)}"/>` +
      `<text x="${L - 4}" y="${y(max * f) + 4}" text-anchor="end">${rate(max * f)}</text>`;
  }
  svg += `<text x="${L}" y="${H - 4}">−5 min</text><text x="${W - 4}" y="${H - 4}" text-anchor="end">now</text>`;
  if (xs.length > 1) svg += `<polyline class="pub" points="${line('pub')}"/><polyline class="del" points="${line('del')}"/>`;
  $('#rates').innerHTML = svg;
}

function drawLatency(h) {
  const bounds = (h && h.upper_bounds_seconds) || [];
  const cum = ((h && h.cumulative_counts) || []).map(num);
  const count = num(h && h.count);
  const per = cum.map((c, i) => c - (i ? cum[i - 1] : 0));
  per.push(Math.max(0, count - (cum.length ? cum[cum.length - 1] : 0)));
  const labels = bounds.map((s) => '≤' + (s < 1e-3 ? (s * 1e6).toFixed(0) + 'µs' : s < 1 ? (s * 1e3).toFixed(s < 0.01 ? 1 : 0) + 'ms' : s + 's'));
  labels.push('more');
  const H = 160, B = 28, n = per.length, max = Math.max(1, ...per);
  const W = fit($('#latency'), H);
  const w = (W - 8) / Math.max(1, n);
  let svg = '';
  per.forEach((c, i) => {
    const bh = (H - B - 14) * c / max;
    svg += `<rect class="bucket" x="${4 + i * w + 2}" y="${H - B - bh}" width="${Math.max(1, w - 4)}" height="${bh}"><title>${labels[i]}: ${fmt(c)}</title></rect>` +
      `<text x="${4 + i * w + w / 2}" y="${H - 14}" text-anchor="middle">${labels[i]}</text>` +
      (c ? `<text x="${4 + i * w + w / 2}" y="${H - B - bh - 3}" text-anchor="middle">${fmt(c)}</text>` : '');
  });
  $('#latency').innerHTML = svg;
  const mean = count ? num(h.sum_seconds) / count : 0;
  $('#latency-summary').textContent = count
    ? `${fmt(count)} deliveries, mean ${(mean * 1e3).toFixed(2)} ms` : 'no deliveries yet';
}

function spark(name) {
  const t = st.trends[name] || [];
  const max = Math.max(1, ...t.map((s) => Math.max(s.recv, s.ack)));
  const pts = (k) => t.map((s, i) => `${(i * 100 / (TREND_SAMPLES - 1)).toFixed(1)},${(18 - 16 * s[k] / max).toFixed(1)}`).join(' ');
  return `<svg width="100" height="20" viewBox="0 0 100 20"><polyline class="spark-recv" points="${pts('recv')}"/>` +
    `<polyline class="spark-ack" points="${pts('ack')}"/></svg>`;
}

