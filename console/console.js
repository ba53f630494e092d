// The tinybroker console (docs/console.md): polls /api/stats once a second
// for the open view, keeps the last minutes of rates itself, and says when
// the broker is gone and when it is back. No library, no network but the
// broker's own listener.
'use strict';

const POLL_MS = 1000;          // one poll a second, from the start of the last
const TIMEOUT_MS = 2500;       // a poll not answered by then counts as lost
const KEEP_SAMPLES = 300;      // 5 minutes of rates
const TREND_SAMPLES = 60;      // a group's trend: its last minute

const st = {
  view: 'overview',
  token: sessionStorage.getItem('tinybroker-token') || '',
  samples: [],                 // {t (uptime ms), pub, del}: rates
  prev: null,                  // the previous broker counters
  trends: {},                  // group name -> [{recv, ack}]
  expanded: new Set(),
  sort: { key: 'backlog', dir: -1 },
  downSince: null,
  backUntil: 0,
  backText: '',
  lastUptime: null,
  console: null,
  lastStats: null,
  armed: null,                 // {button, timer}: an action awaiting its confirm
};

const $ = (sel) => document.querySelector(sel);
// -- polling ------------------------------------------------------------------

function query() {
  const p = new URLSearchParams();
  const filter = (id) => $(id).value.trim();
  switch (st.view) {
    case 'overview': p.set('limit', '1'); break;
    case 'groups': p.set('group_filter', filter('#filter-groups')); p.set('limit', '500'); break;
    case 'sessions': p.set('session_filter', filter('#filter-sessions')); p.set('limit', '100'); break;
    case 'topics': p.set('topic_pattern', filter('#filter-topics') || '>'); p.set('limit', '100'); break;
    case 'actors': p.set('actors', '1'); p.set('limit', '100'); break;
  }
  return '/api/stats?' + p.toString();
}

function headers(extra) {
  const h = Object.assign({}, extra || {});
  if (st.token) h.Authorization = 'Bearer ' + st.token;
  return h;
}

async function poll() {
  const started = Date.now();
  const view = st.view;
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), TIMEOUT_MS);
  try {
    const res = await fetch(query(), { headers: headers(), cache: 'no-store', signal: ctl.signal });
    const body = await res.json().catch(() => ({ error: 'the answer was not JSON' }));
    if (res.status === 401 || res.status === 403) {
      askToken(body.error || ('refused: HTTP ' + res.status));
    } else if (res.status === 200) {
      reachable();
      showViewError('');
      if (view === st.view) render(body);
    } else if (res.status === 400) {
      reachable();
      showViewError(body.error || 'bad request');
    } else {
      unreachable('the broker answered HTTP ' + res.status + (body.error ? ': ' + body.error : ''));
    }
  } catch (e) {
    unreachable(e.name === 'AbortError' ? 'no answer within ' + TIMEOUT_MS / 1000 + ' s' : 'no connection');
  } finally {
    clearTimeout(timer);
    setTimeout(poll, Math.max(100, POLL_MS - (Date.now() - started)));
  }
}

function setStatus(state, text) {
  const el = $('#status');
  el.dataset.state = state;
  el.textContent = text;
  document.body.classList.toggle('stale', state === 'down');
}

function unreachable(why) {
  if (st.downSince === null) st.downSince = new Date();
  const secs = Math.round((Date.now() - st.downSince) / 1000);
  setStatus('down', `Broker unreachable since ${st.downSince.toLocaleTimeString()} (${secs} s; ${why}). ` +
    'The figures below are the last ones seen; retrying every second.');
}

function reachable() {
  if (st.downSince !== null) {
    st.backText = `Broker is back at ${new Date().toLocaleTimeString()} after ` +
      `${Math.round((Date.now() - st.downSince) / 1000)} s away`;
    st.backUntil = Date.now() + 10000;
    st.downSince = null;
  }
  $('#auth').classList.add('hidden');
}

function askToken(message) {
  setStatus('auth', 'The broker refused the console: ' + message);
  $('#auth-message').textContent = st.token
    ? 'This token was refused: ' + message
    : 'This broker has auth on: the console needs an admin token.';
  $('#auth').classList.remove('hidden');
}

function showViewError(text) {
  const el = $('#view-error');
  el.textContent = text;
  el.classList.toggle('hidden', !text);
}

// -- rendering ----------------------------------------------------------------

function render(body) {
  const s = body.stats;
  const b = s.broker;
  st.console = body.console;
  st.lastStats = body;
  const uptime = num(b.uptime_ms);
  if (st.lastUptime !== null && uptime < st.lastUptime) {
    // A new broker process: its counters start again.
    st.prev = null;
    st.trends = {};
    st.backText = st.backText ? st.backText + '; it restarted (uptime ' + duration(uptime) + ')'
      : 'Broker restarted at ' + new Date().toLocaleTimeString() + ' (uptime ' + duration(uptime) + ')';
    st.backUntil = Date.now() + 10000;
  }
  st.lastUptime = uptime;
  if (Date.now() < st.backUntil) setStatus('back', st.backText);
  else {
    st.backText = '';
    setStatus('ok', `Live · updated ${new Date().toLocaleTimeString()} · every second`);
  }
  $('#identity').textContent = `${b.version} · up ${duration(uptime)}` +
    (body.console.token ? ` · token ${body.console.token}` : '') +
    (body.console.actions ? '' : ' · read-only');
  $('#logout').classList.toggle('hidden', !st.token);
  sample(b);
  renderOverview(body);
  if (s.groups) trackTrends(s.groups);
  if (st.view === 'groups') renderGroups(s);
  if (st.view === 'sessions') renderSessions(s);
  if (st.view === 'topics') renderTopics(s);
  if (st.view === 'actors') renderActors(s);
  for (const el of document.querySelectorAll('.actions button, .actions input'))
    el.disabled = !body.console.actions;
}

function sample(b) {
  const now = { t: num(b.uptime_ms), pub: num(b.published), del: num(b.delivered) };
  if (st.prev && now.t > st.prev.t) {
    const dt = (now.t - st.prev.t) / 1000;
    st.samples.push({ t: Date.now(), pub: Math.max(0, now.pub - st.prev.pub) / dt,
      del: Math.max(0, now.del - st.prev.del) / dt });
    if (st.samples.length > KEEP_SAMPLES) st.samples.shift();
  }
  st.prev = now;
}

function renderOverview(body) {
  const b = body.stats.broker;
  const total = body.groups_total || { pending: 0, in_flight: 0 };
  const cards = [
    ['published', 'Published', fmt(b.published)],
    ['delivered', 'Delivered', fmt(b.delivered)],
    ['sessions', 'Sessions', fmt(b.sessions)],
    ['topics', 'Topics', fmt(b.topics)],
    ['subscriptions', 'Subscriptions', fmt(b.subscriptions)],
    ['groups', 'Groups', fmt(b.groups)],
    ['held', 'Held by groups', fmt(num(total.pending) + num(total.in_flight)) + ' msgs'],
    ['held_bytes', 'Held bytes', bytes(b.held_bytes)],
    ['buffered', 'Buffered for sessions', fmt(b.buffered)],
    ['dropped', 'Dropped (slow subscribers)', fmt(b.dropped), num(b.dropped) > 0],
    ['refused', 'Refused', fmt(b.refused), num(b.refused) > 0],
    ['unrouted', 'Unrouted', fmt(b.unrouted)],
    ['unauthenticated', 'Unauthenticated', fmt(b.unauthenticated), num(b.unauthenticated) > 0],
    ['permission_denied', 'Permission denied', fmt(b.permission_denied), num(b.permission_denied) > 0],
    ['rss', 'Memory (RSS)', bytes(b.rss_bytes)],
    ['uptime', 'Uptime', duration(b.uptime_ms)],
    ['version', 'Version', esc(b.version)],
  ];
  const values = { held: num(total.pending) + num(total.in_flight) };
  $('#cards').innerHTML = cards.map(([id, label, text, bad]) =>
    `<div class="card${bad ? ' bad' : ''}"><span class="label">${label}</span>` +
    `<span class="value" id="c-${id}" data-value="${esc(id in values ? values[id] : (b[id] ?? ''))}">${text}</span></div>`).join('');
  const last = st.samples[st.samples.length - 1];
  $('#rate-pub').textContent = last ? rate(last.pub) : '–';
  $('#rate-del').textContent = last ? rate(last.del) : '–';
  drawRates();
  drawLatency(b.delivery_latency);
}

// -- groups -------------------------------------------------------------------

function trackTrends(groups) {
  for (const g of groups) {
    const t = st.trends[g.name] || (st.trends[g.name] = []);
    t.push({ recv: num(g.counters.received_per_second_1s), ack: num(g.counters.acked_per_second_1s) });
    if (t.length > TREND_SAMPLES) t.shift();
  }
}

// Returns why `m`, a member of `g`, is stuck, or '' if it is not.
function stuckReason(g, m) {
  const ackWait = num(g.settings.ack_wait_ms);
  if (m.stalled) return 'stalled: its deliveries expired 3 times in a row';
  if (num(m.in_flight) > 0 && ackWait > 0 && num(m.oldest_in_flight_age_ms) >= ackWait)
    return 'holds a message past ack_wait (' + duration(ackWait) + ')';
  if (m.active && num(m.credit) === 0 && num(g.counters.pending) > 0)
    return 'no credit while ' + fmt(g.counters.pending) + ' messages wait';
  return '';
}

const sorters = {
  name: (g) => g.name, pattern: (g) => g.settings.pattern, members: (g) => num(g.counters.members),
  backlog: (g) => num(g.counters.pending) + num(g.counters.in_flight), in_flight: (g) => num(g.counters.in_flight),
  oldest: (g) => num(g.counters.oldest_pending_age_ms), recv: (g) => num(g.counters.received_per_second_1s),
  acked: (g) => num(g.counters.acked_per_second_1s), dead: (g) => num(g.counters.dead_lettered),
  refused: (g) => num(g.counters.refused),
};

function renderGroups(s) {
  const groups = s.groups.slice();
  const key = sorters[st.sort.key];
  groups.sort((a, b) => {
    const x = key(a), y = key(b);
    return (x < y ? -1 : x > y ? 1 : a.name < b.name ? -1 : 1) * st.sort.dir;
  });
  $('#groups-count').textContent = `${fmt(groups.length)} of ${fmt(s.groups_matched)} matching groups shown`;
  for (const th of document.querySelectorAll('#groups th[data-sort]')) {
    th.classList.toggle('sorted', th.dataset.sort === st.sort.key);
    th.classList.toggle('asc', st.sort.dir > 0);
  }
  const rows = [];
  for (const g of groups) {
    const c = g.counters;
    const members = g.members || [];
    const stuck = members.filter((m) => stuckReason(g, m));
    rows.push(`<tr class="group${stuck.length ? ' has-stuck' : ''}" data-group="${esc(g.name)}">` +
      `<td>${esc(g.name)}${stuck.length ? ` <span class="stuck-mark">${stuck.length} stuck</span>` : ''}</td>` +
      `<td>${esc(g.settings.pattern)}</td>` + cell(c.members) +
      `<td class="num" data-field="pending" data-value="${num(c.pending)}">${fmt(c.pending)}</td>` +
      `<td class="num" data-field="in_flight" data-value="${num(c.in_flight)}">${fmt(c.in_flight)}</td>` +
      cell(c.oldest_pending_age_ms, num(c.oldest_pending_age_ms) ? duration(c.oldest_pending_age_ms) : '–') +
      cell(c.received_per_second_1s, rate(c.received_per_second_1s)) + cell(c.acked_per_second_1s, rate(c.acked_per_second_1s)) +
      `<td>${spark(g.name)}</td>` +
      `<td class="num" data-field="dead_lettered" data-value="${num(c.dead_lettered)}">${fmt(c.dead_lettered)}</td>` +
      `<td class="num" data-field="refused" data-value="${num(c.refused)}">${fmt(c.refused)}</td>` +
      `<td class="actions"><button data-act="purge" data-name="${esc(g.name)}">Purge</button> ` +
      `<button data-act="delete" data-name="${esc(g.name)}">Delete</button></td></tr>`);
    if (st.expanded.has(g.name)) rows.push(memberRows(g));
  }
  $('#groups tbody').innerHTML = rows.join('') ||
    '<tr><td colspan="12" class="muted">No group matches.</td></tr>';
  if (st.armed) rearm();
}

function memberRows(g) {
  const members = g.members || [];
  const body = members.map((m) => {
    const why = stuckReason(g, m);
    const state = m.stalled ? 'stalled' : m.active ? 'active' : 'leaving';
    return `<tr class="member${why ? ' stuck' : ''}${m.active ? '' : ' leaving'}" data-member="${esc(m.peer)}/${esc(m.subscription_id)}">` +
      `<td>${esc(m.client_name || '–')}</td><td>${esc(m.peer)}</td><td>${esc(m.token || '–')}</td>` +
      cell(m.subscription_id) +
      `<td class="num" data-field="in_flight" data-value="${num(m.in_flight)}">${fmt(m.in_flight)}</td>` +
      `<td class="num" data-field="credit" data-value="${num(m.credit)}">${fmt(m.credit)}</td>` +
      cell(m.acks) + cell(m.nacks) + cell(m.expired) +
      cell(m.oldest_in_flight_age_ms, num(m.oldest_in_flight_age_ms) ? duration(m.oldest_in_flight_age_ms) : '–') +
      `<td>${state}${why ? ` <span class="stuck-mark" title="${esc(why)}">stuck</span> <span class="why">${esc(why)}</span>` : ''}</td></tr>`;
  }).join('');
  return `<tr class="members" data-members-of="${esc(g.name)}"><td colspan="12"><table class="data">` +
    '<thead><tr><th>Name</th><th>Peer</th><th>Token</th><th class="num">Subscription</th><th class="num">In flight</th>' +
    '<th class="num">Credit</th><th class="num">Acks</th><th class="num">Nacks</th><th class="num">Expired</th>' +
    '<th class="num">Oldest in flight</th><th>State</th></tr></thead><tbody>' +
    (body || '<tr><td colspan="11" class="muted">No members.</td></tr>') + '</tbody></table></td></tr>';
}

// -- sessions, topics, actors ------------------------------------------------

function renderSessions(s) {
  $('#sessions-count').textContent = `${fmt(s.sessions.length)} of ${fmt(s.sessions_matched)} matching sessions shown`;
  $('#sessions tbody').innerHTML = s.sessions.map((x) =>
    `<tr data-session="${esc(x.peer)}"><td>${esc(x.peer)}</td><td>${esc(x.client_name || '–')}</td><td>${esc(x.token || '–')}</td>` +
    cell(x.published) + cell(x.delivered) + cell(x.dropped) + cell(x.subscriptions) + cell(x.buffered_messages) +
    cell(x.buffered_bytes, bytes(x.buffered_bytes)) + cell(x.connected_ms, duration(x.connected_ms)) + '</tr>').join('') ||
    '<tr><td colspan="10" class="muted">No session matches.</td></tr>';
}

function renderTopics(s) {
  $('#topics-count').textContent = `${fmt(s.topics.length)} of ${fmt(s.topics_matched)} matching topics shown`;
  $('#topics tbody').innerHTML = s.topics.map((t) =>
    `<tr data-topic="${esc(t.name)}"><td>${esc(t.name)}</td>` + cell(t.destinations) + cell(t.groups) + cell(t.publishers) + '</tr>').join('') ||
    '<tr><td colspan="4" class="muted">No topic matches.</td></tr>';
}

function renderActors(s) {
  const max = Math.max(1, ...s.actors.map((a) => num(a.mailbox)));
  $('#actors tbody').innerHTML = s.actors.map((a) =>
    `<tr data-actor="${esc(a.id)}"><td>${esc(a.kind)}</td><td>${esc(a.name)}</td>` + cell(a.id) + cell(a.mailbox) +
    `<td><svg width="100" height="8"><rect class="bucket" width="${(100 * num(a.mailbox) / max).toFixed(0)}" height="8"/></svg></td></tr>`).join('');
}

// -- actions -------------------------------------------------------------------

async function act(kind, params) {
  const res = await fetch('/api/groups/' + kind, {
    method: 'POST', cache: 'no-store', body: new URLSearchParams(params),
    headers: headers({ 'X-Tinybroker-Console': '1' }),
  }).catch(() => null);
  const body = res ? await res.json().catch(() => ({})) : { error: 'no connection to the broker' };
  const el = $('#action-result');
  el.classList.remove('hidden');
  el.classList.toggle('error', !res || !res.ok);
  if (res && res.ok) {
    const what = { create: 'created', delete: 'deleted', purge: 'purged' }[kind];
    el.textContent = `Group ${params.name} ${what}` +
      (kind === 'create' ? '.' : ` (${fmt(body.messages)} messages dropped).`);
  } else {
    el.textContent = `Could not ${kind} group ${params.name}: ${body.error || 'HTTP ' + (res && res.status)}`;
  }
}

function rearm() {
  const { kind, name } = st.armed;
  const button = document.querySelector(`#groups button[data-act="${kind}"][data-name="${CSS.escape(name)}"]`);
  if (button) { button.classList.add('confirm'); button.textContent = 'Confirm ' + kind; }
}

function onGroupsClick(ev) {
  const button = ev.target.closest('button[data-act]');
  if (button) {
    ev.stopPropagation();
    const kind = button.dataset.act, name = button.dataset.name;
    if (st.armed && st.armed.kind === kind && st.armed.name === name) {
      clearTimeout(st.armed.timer);
      st.armed = null;
      act(kind, { name });
      return;
    }
    if (st.armed) clearTimeout(st.armed.timer);
    st.armed = { kind, name, timer: setTimeout(() => { st.armed = null; }, 5000) };
    rearm();
    return;
  }
  const th = ev.target.closest('th[data-sort]');
  if (th) {
    const key = th.dataset.sort;
    st.sort = { key, dir: st.sort.key === key ? -st.sort.dir : (key === 'name' || key === 'pattern' ? 1 : -1) };
  } else {
    const row = ev.target.closest('tr.group');
    if (!row) return;
    const name = row.dataset.group;
    if (st.expanded.has(name)) st.expanded.delete(name); else st.expanded.add(name);
  }
  if (st.lastStats && st.lastStats.stats.groups) renderGroups(st.lastStats.stats);
}

// -- start -----------------------------------------------------------------------

function show(view) {
  st.view = view;
  for (const b of document.querySelectorAll('nav button')) b.classList.toggle('active', b.dataset.view === view);
  for (const sec of document.querySelectorAll('main > section')) sec.classList.toggle('hidden', sec.id !== 'view-' + view);
  showViewError('');
  location.hash = view;
  // Charts drawn while hidden had no width: draw them again now.
  if (view === 'overview' && st.lastStats) renderOverview(st.lastStats);
}

document.addEventListener('DOMContentLoaded', () => {
  for (const b of document.querySelectorAll('nav button')) b.addEventListener('click', () => show(b.dataset.view));
  $('#groups').addEventListener('click', onGroupsClick);
  $('#auth').addEventListener('submit', (ev) => {
    ev.preventDefault();
    st.token = $('#token-input').value.trim();
    sessionStorage.setItem('tinybroker-token', st.token);
    $('#auth').classList.add('hidden');
    setStatus('starting', 'Trying the token…');
  });
  $('#logout').addEventListener('click', () => {
    st.token = '';
    sessionStorage.removeItem('tinybroker-token');
    $('#token-input').value = '';
  });
  $('#create-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    act('create', { name: $('#create-name').value.trim(), pattern: $('#create-pattern').value.trim() });
  });
  const initial = location.hash.slice(1);
  if (['overview', 'groups', 'sessions', 'topics', 'actors'].includes(initial)) show(initial);
  poll();
});
