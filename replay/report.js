// Bursar replay: draws the run in BURSAR (written by package replay) on
// canvas and moves a cursor through it. Plain script, no libraries and no
// requests, so the page works from file:// and offline.
(function () {
  'use strict';
  var D = BURSAR;
  var N = D.t.length;
  var NC = D.names.length;
  var STORM = D.storm; // display group of the (first) storm, -1 without one
  var VICTIM = D.victim; // display group of the (first) victim, -1 without one
  // Every chart uses the same plot margins so that the time axis, the storm
  // window and the cursor line up from one chart to the next.
  var M = { l: 48, r: 64, t: 6, b: 17 };
  var GRID = '#e6e9ed';
  var AXIS = '#59636e';
  var FONT = '11px system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", sans-serif';

  var $ = function (id) { return document.getElementById(id); };
  var els = {
    play: $('play'), speed: $('speed'), scrub: $('scrub'), clock: $('clock'), phase: $('phase'),
    roClock: $('ro-clock'), roMult: $('ro-mult'), busy: $('ro-busy'), free: $('ro-free'), latest: $('latest')
  };

  // ---- formatting -------------------------------------------------------
  function clock(s) {
    s = Math.max(0, Math.round(s));
    var h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, x = s % 60;
    return h + ':' + (m < 10 ? '0' : '') + m + ':' + (x < 10 ? '0' : '') + x;
  }
  function fmt(v, prec) {
    if (v === null || v === undefined || !isFinite(v)) return '–';
    return v.toFixed(prec);
  }
  // The storm window as drawn: clipped to the run, and absent when no
  // storm ran or the window lies beyond the end.
  var stormShown = D.storms > 0 && D.stormWindow[0] < D.ticks;
  var stormLo = Math.min(D.stormWindow[0], D.ticks), stormHi = Math.min(D.stormWindow[1], D.ticks);
  function inWindow(t) {
    return D.storms > 0 && t >= D.stormWindow[0] && t < D.stormWindow[1];
  }
  // niceStep picks a 1-2-5 step that gives at most about n ticks up to max.
  function niceStep(max, n) {
    var raw = max / n, p = Math.pow(10, Math.floor(Math.log10(raw)));
    var f = raw / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
  }
  function timeStep(ticks) {
    var steps = [60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 21600, 43200, 86400];
    for (var i = 0; i < steps.length; i++) if (ticks / steps[i] <= 9) return steps[i];
    return niceStep(ticks, 8);
  }
  function colMax(cols) {
    var m = 0;
    for (var c = 0; c < cols.length; c++) {
      var xs = cols[c];
      for (var i = 0; i < xs.length; i++) if (xs[i] > m) m = xs[i];
    }
    return m;
  }

  // ---- charts -----------------------------------------------------------
  // A chart keeps an offscreen copy of everything that does not move; a
  // frame is that copy, the fade over the future and the cursor.
  function Chart(id, drawStatic, top) {
    this.mt = top || M.t;
    this.canvas = $(id);
    this.ctx = this.canvas.getContext('2d');
    this.drawStatic = drawStatic;
    this.cache = document.createElement('canvas');
  }
  Chart.prototype.layout = function () {
    var dpr = window.devicePixelRatio || 1;
    var w = Math.max(50, this.canvas.clientWidth), h = Math.max(40, this.canvas.clientHeight);
    this.w = w; this.h = h; this.dpr = dpr;
    this.canvas.width = this.cache.width = Math.round(w * dpr);
    this.canvas.height = this.cache.height = Math.round(h * dpr);
    this.top = this.mt; this.pw = w - M.l - M.r; this.ph = h - this.top - M.b;
    var g = this.cache.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = '#fff';
    g.fillRect(0, 0, w, h);
    g.font = FONT;
    this.drawStatic(g, this);
  };
  Chart.prototype.x = function (t) { return M.l + (D.ticks > 0 ? t / D.ticks : 0) * this.pw; };
  Chart.prototype.frame = function (t) {
    var g = this.ctx;
    g.setTransform(1, 0, 0, 1, 0, 0);
    g.drawImage(this.cache, 0, 0);
    if (N === 0) return;
    g.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    var x = this.x(t);
    // The future is faded, not hidden: the whole run stays readable while
    // the cursor says where the replay is.
    g.fillStyle = 'rgba(255,255,255,0.55)';
    g.fillRect(x, this.top, M.l + this.pw - x, this.ph);
    g.strokeStyle = '#1f2328';
    g.lineWidth = 1.5;
    g.beginPath();
    g.moveTo(Math.round(x) + 0.5, this.top - 2);
    g.lineTo(Math.round(x) + 0.5, this.top + this.ph + 2);
    g.stroke();
  };

  // frameAxes draws the grid, the time axis, a y axis with the given ticks
  // and the storm window, under the data.
  function frameAxes(g, c, yTicks, yOf, label) {
    if (stormShown) {
      g.fillStyle = D.shade;
      g.fillRect(c.x(stormLo), c.top, c.x(stormHi) - c.x(stormLo), c.ph);
    }
    g.lineWidth = 1;
    g.strokeStyle = GRID;
    g.fillStyle = AXIS;
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    g.beginPath();
    for (var i = 0; i < yTicks.length; i++) {
      var y = Math.round(yOf(yTicks[i])) + 0.5;
      g.moveTo(M.l, y);
      g.lineTo(M.l + c.pw, y);
      g.fillText(label(yTicks[i]), M.l - 5, y);
    }
    var step = timeStep(D.ticks);
    g.textAlign = 'center';
    g.textBaseline = 'top';
    for (var t = 0; t <= D.ticks; t += step) {
      var x = Math.round(c.x(t)) + 0.5;
      g.moveTo(x, c.top);
      g.lineTo(x, c.top + c.ph);
      g.fillText(clock(t).replace(/:00$/, ''), x, c.top + c.ph + 3);
    }
    g.stroke();
    g.strokeStyle = '#afb8c1';
    g.strokeRect(M.l + 0.5, c.top + 0.5, c.pw - 1, c.ph - 1);
  }
  function stormEdges(g, c, caption) {
    if (!stormShown) return;
    g.save();
    g.strokeStyle = '#d55e00';
    g.setLineDash([3, 3]);
    g.lineWidth = 1;
    g.beginPath();
    [stormLo, stormHi].forEach(function (t) {
      var x = Math.round(c.x(t)) + 0.5;
      g.moveTo(x, c.top);
      g.lineTo(x, c.top + c.ph);
    });
    g.stroke();
    if (caption) {
      g.fillStyle = '#b04a00';
      g.font = '600 ' + FONT;
      g.textAlign = 'left';
      g.textBaseline = 'bottom';
      g.fillText('storm window', c.x(stormLo) + 4, c.top - 2);
    }
    g.restore();
  }
  function noData(g, c) {
    g.fillStyle = AXIS;
    g.textAlign = 'center';
    g.textBaseline = 'middle';
    g.fillText('no samples in this run', M.l + c.pw / 2, c.top + c.ph / 2);
  }
  function linear(c, max) {
    return function (v) { return c.top + c.ph * (1 - v / max); };
  }
  function ticksTo(max, step) {
    var out = [];
    for (var v = 0; v <= max + 1e-9; v += step) out.push(v);
    return out;
  }

  function drawOccupancy(g, c) {
    var max = D.pool, yOf = linear(c, max);
    frameAxes(g, c, ticksTo(max, niceStep(max, 4)), yOf, function (v) { return String(v); });
    if (N === 0) return noData(g, c);
    // Stack bottom-up in display order; each band is the polygon between
    // the running total before and after the campaign.
    var below = new Float64Array(N);
    for (var k = 0; k < NC; k++) {
      var held = D.held[k];
      g.beginPath();
      for (var i = 0; i < N; i++) g.lineTo(c.x(D.t[i]), yOf(below[i] + held[i]));
      for (i = N - 1; i >= 0; i--) g.lineTo(c.x(D.t[i]), yOf(below[i]));
      g.closePath();
      g.fillStyle = D.colors[k];
      g.fill();
      for (i = 0; i < N; i++) below[i] += held[i];
    }
    stormEdges(g, c, true);
    g.fillStyle = AXIS;
    g.textAlign = 'left';
    g.textBaseline = 'middle';
    g.fillText('pool ' + D.pool, M.l + c.pw + 5, yOf(max));
  }

  function drawGrants(g, c) {
    var gr = D.grants, maxLat = 1000;
    for (var i = 0; i < gr.lat.length; i++) maxLat = Math.max(maxLat, gr.lat[i]);
    // A little room under 1 s keeps the warm grants' dots off the axis.
    var top = Math.log10(maxLat) * 1.04, bottom = -0.12;
    var yLat = function (v) { return c.top + c.ph * (1 - (Math.log10(Math.max(1, v)) - bottom) / (top - bottom)); };
    var ticks = [];
    for (var v = 1; v <= maxLat; v *= 10) ticks.push(v);
    frameAxes(g, c, ticks, yLat, function (v) { return v + ' s'; });
    // The multiplier runs from ×1 to ×3 (near the top) on the right axis,
    // as grey steps under the dots.
    // It shares its ×1 baseline with the 1 s line.
    var base = yLat(1), high = c.top + 0.12 * c.ph;
    var yMult = function (m) { return base - (base - high) * (m - 1) / 2; };
    g.fillStyle = AXIS;
    g.textAlign = 'left';
    g.textBaseline = 'middle';
    [1, 1.5, 2.25, 3].forEach(function (m) { g.fillText('×' + m, M.l + c.pw + 5, yMult(m)); });
    if (N > 0) {
      g.beginPath();
      g.moveTo(c.x(0), yMult(1));
      for (i = 0; i < N; i++) {
        var x0 = c.x(i === 0 ? 0 : D.t[i - 1]);
        g.lineTo(x0, yMult(D.mult[i]));
        g.lineTo(c.x(D.t[i]), yMult(D.mult[i]));
      }
      g.lineTo(c.x(D.t[N - 1]), yMult(1));
      g.closePath();
      g.fillStyle = 'rgba(89,99,110,0.16)';
      g.fill();
      g.strokeStyle = 'rgba(89,99,110,0.75)';
      g.lineWidth = 1.25;
      g.stroke();
    }
    stormEdges(g, c, false);
    // Victims last, so their diamonds sit on top of everything.
    var order = [];
    for (i = 0; i < gr.t.length; i++) if (gr.c[i] !== VICTIM) order.push(i);
    for (i = 0; i < gr.t.length; i++) if (gr.c[i] === VICTIM) order.push(i);
    order.forEach(function (j) {
      var x = c.x(gr.t[j]), y = yLat(gr.lat[j]);
      g.fillStyle = D.pathColors[gr.p[j]] || '#999';
      if (gr.c[j] === VICTIM) {
        g.beginPath();
        g.moveTo(x, y - 5); g.lineTo(x + 5, y); g.lineTo(x, y + 5); g.lineTo(x - 5, y);
        g.closePath();
        g.fill();
        g.strokeStyle = D.colors[VICTIM];
        g.lineWidth = 2;
        g.stroke();
      } else {
        g.globalAlpha = 0.85;
        g.beginPath();
        g.arc(x, y, 2.6, 0, 2 * Math.PI);
        g.fill();
        g.globalAlpha = 1;
      }
    });
  }

  function drawLines(g, c, cols, rates, unit, fixedMax) {
    var max = fixedMax;
    if (!max) {
      max = colMax(cols);
      for (var k = 0; k < rates.length; k++) if (rates[k] !== null && rates[k] > max) max = rates[k];
      max = max > 0 ? max * 1.12 : 1;
    }
    var step = niceStep(max, c.ph < 80 ? 3 : 4), yOf = linear(c, max);
    frameAxes(g, c, ticksTo(max, step), yOf, function (v) { return (step < 1 ? v.toFixed(1) : String(Math.round(v))) + unit; });
    if (N === 0) return noData(g, c);
    stormEdges(g, c, false);
    // A campaign with no envelope and no use in this dimension is left out,
    // so the baseline is not a pile of flat zero lines.
    var shown = [];
    for (k = 0; k < NC; k++) {
      var xs = cols[k], any = rates[k] !== null;
      for (var i = 0; i < N && !any; i++) if (xs[i] > 0) any = true;
      if (any) shown.push(k);
    }
    // Sustained rates: dashed in the campaign's colour. Equal rates share
    // one line with interleaved dashes, and one label.
    var labelled = {};
    shown.forEach(function (k, n) {
      if (rates[k] === null) return;
      var y = Math.round(yOf(rates[k])) + 0.5;
      g.save();
      g.strokeStyle = D.colors[k];
      g.lineWidth = 2;
      g.setLineDash([6, 6]);
      g.lineDashOffset = -6 * (n % 2);
      g.beginPath();
      g.moveTo(M.l, y);
      g.lineTo(M.l + c.pw, y);
      g.stroke();
      g.restore();
      var key = String(rates[k]);
      labelled[key] = (labelled[key] ? labelled[key] + ', ' : '') + D.names[k];
    });
    g.font = FONT;
    g.textAlign = 'left';
    g.textBaseline = 'middle';
    Object.keys(labelled).forEach(function (key) {
      var y = yOf(Number(key));
      g.fillStyle = '#1f2328';
      g.fillText('R ' + key + unit, M.l + c.pw + 5, y);
    });
    // Reverse display order: the victim is drawn last, on top.
    shown.slice().reverse().forEach(function (k) {
      var xs = cols[k];
      g.strokeStyle = D.colors[k];
      g.lineWidth = 1.4;
      g.beginPath();
      for (var i = 0; i < N; i++) {
        var v = xs[i] === null ? 0 : xs[i];
        if (i === 0) g.moveTo(c.x(D.t[i]), yOf(v)); else g.lineTo(c.x(D.t[i]), yOf(v));
      }
      g.stroke();
    });
  }

  var none = D.names.map(function () { return null; });
  var charts = [
    new Chart('chart-occupancy', drawOccupancy, 16),
    new Chart('chart-grants', drawGrants),
    new Chart('chart-fill', function (g, c) { drawLines(g, c, D.fill, none, '%', 100); }),
    new Chart('chart-io', function (g, c) { drawLines(g, c, D.io, D.ioRate, ' GB/s'); }),
    new Chart('chart-inference', function (g, c) { drawLines(g, c, D.inf, D.infRate, ''); })
  ];

  // ---- the play head ----------------------------------------------------
  // pos is a fractional sample index: playback advances it smoothly, the
  // cursor shows the sample at floor(pos).
  var state = { pos: 0, playing: false, speed: 120, last: 0 };
  function index() { return N === 0 ? -1 : Math.min(N - 1, Math.max(0, Math.floor(state.pos))); }
  function timeAt(i) { return i < 0 ? 0 : D.t[i]; }

  // The grant log is in time order, so the grants up to the cursor are a
  // prefix; find its end by bisection.
  function grantsUpTo(t) {
    var lo = 0, hi = D.grants.t.length;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (D.grants.t[mid] <= t) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  function nearestSample(t) {
    var lo = 0, hi = N - 1;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (D.t[mid] < t) lo = mid + 1; else hi = mid;
    }
    if (lo > 0 && t - D.t[lo - 1] < D.t[lo] - t) lo--;
    return lo;
  }

  function renderReadout(i) {
    var t = timeAt(i), busy = 0;
    els.clock.textContent = clock(t);
    els.roClock.textContent = clock(t) + ' (t = ' + t + ' s)';
    els.phase.hidden = !inWindow(t);
    for (var k = 0; k < NC; k++) {
      var ok = i >= 0;
      if (ok) busy += D.held[k][i];
      $('ro-held-' + k).textContent = ok ? String(D.held[k][i]) : '–';
      $('ro-fill-' + k).textContent = ok ? fmt(D.fill[k][i], 0) + '%' : '–';
      $('ro-spent-' + k).textContent = ok ? fmt(D.spent[k][i], 0) : '–';
      $('ro-io-' + k).textContent = ok ? fmt(D.io[k][i], 1) : '–';
      $('ro-inf-' + k).textContent = ok ? fmt(D.inf[k][i], 0) : '–';
    }
    els.busy.textContent = i >= 0 ? String(busy) : '–';
    els.free.textContent = i >= 0 ? (D.pool - busy) + ' free of ' + D.pool : '–';
    els.roMult.textContent = i >= 0 ? 'congestion ×' + D.mult[i] : '';
    var end = grantsUpTo(t), frag = document.createDocumentFragment();
    for (var j = end - 1; j >= Math.max(0, end - 6); j--) {
      var li = document.createElement('li'), c = D.grants.c[j];
      var when = document.createElement('span');
      when.className = 'when';
      when.textContent = clock(D.grants.t[j]);
      var dot = document.createElement('i');
      dot.className = 'dot';
      dot.style.background = D.pathColors[D.grants.p[j]] || '#999';
      var what = document.createElement('span');
      what.textContent = (c >= 0 ? D.names[c] : 'other') + ' · ' + D.grants.gpus[j] + ' GPUs · ' +
        D.grants.lat[j] + ' s ' + (D.pathNames[D.grants.p[j]] || '');
      if (c === VICTIM) li.className = 'victim';
      li.appendChild(when); li.appendChild(dot); li.appendChild(what);
      frag.appendChild(li);
    }
    els.latest.replaceChildren(frag);
  }

  var shown = -2;
  function render(force) {
    var i = index();
    els.scrub.value = String(Math.max(0, i));
    els.scrub.setAttribute('aria-valuetext', clock(timeAt(i)));
    if (i === shown && !force) return;
    shown = i;
    var t = timeAt(i);
    for (var k = 0; k < charts.length; k++) charts[k].frame(t);
    renderReadout(i);
  }

  function setPlaying(on) {
    if (N < 2) on = false;
    state.playing = on;
    els.play.textContent = on ? '❚❚ Pause' : '▶ Play';
    els.play.setAttribute('aria-pressed', on ? 'true' : 'false');
    if (on) {
      if (index() >= N - 1) state.pos = 0;
      state.last = 0;
      requestAnimationFrame(tick);
    }
  }
  function tick(now) {
    if (!state.playing) return;
    if (state.last) {
      var dt = Math.min(0.25, (now - state.last) / 1000);
      state.pos += dt * state.speed / D.step;
    }
    state.last = now;
    if (state.pos >= N - 1) {
      state.pos = N - 1;
      setPlaying(false);
    }
    render(false);
    if (state.playing) requestAnimationFrame(tick);
  }
  function seek(i) {
    state.pos = Math.min(Math.max(0, N - 1), Math.max(0, i));
    render(false);
  }
  function step(n) {
    setPlaying(false);
    seek(index() + n);
  }

  // ---- controls ---------------------------------------------------------
  els.scrub.max = String(Math.max(0, N - 1));
  els.scrub.disabled = N === 0;
  els.play.disabled = N < 2;
  els.play.addEventListener('click', function () { setPlaying(!state.playing); });
  els.speed.addEventListener('change', function () { state.speed = Number(els.speed.value) || 120; });
  els.scrub.addEventListener('input', function () { seek(Number(els.scrub.value)); });
  document.addEventListener('keydown', function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    var el = e.target, tag = el && el.tagName;
    var onSlider = el === els.scrub;
    // Text fields and selects keep every key; buttons and summaries keep
    // Space (it presses them); the slider keeps the plain arrows, Home and
    // End, which move it natively and fire its input event.
    if (tag === 'SELECT' || tag === 'TEXTAREA' || (tag === 'INPUT' && !onSlider)) return;
    var pressable = tag === 'BUTTON' || tag === 'SUMMARY' || tag === 'A';
    switch (e.key) {
      case ' ':
      case 'Spacebar':
        if (pressable) return;
        e.preventDefault();
        setPlaying(!state.playing);
        break;
      case 'ArrowLeft':
      case 'ArrowRight':
        if (onSlider && !e.shiftKey) { setPlaying(false); return; }
        e.preventDefault();
        step((e.key === 'ArrowLeft' ? -1 : 1) * (e.shiftKey ? 10 : 1));
        break;
      case 'Home':
      case 'End':
        if (onSlider) { setPlaying(false); return; }
        e.preventDefault();
        step(e.key === 'Home' ? -N : N);
        break;
    }
  });
  // Click or drag on any chart to put the cursor there.
  charts.forEach(function (c) {
    var seekTo = function (e) {
      if (N === 0) return;
      var r = c.canvas.getBoundingClientRect();
      var t = (e.clientX - r.left - M.l) / c.pw * D.ticks;
      var i = nearestSample(t);
      seek(i);
    };
    c.canvas.addEventListener('pointerdown', function (e) {
      c.canvas.setPointerCapture(e.pointerId);
      seekTo(e);
    });
    c.canvas.addEventListener('pointermove', function (e) { if (e.buttons & 1) seekTo(e); });
  });

  function layout() {
    charts.forEach(function (c) { c.layout(); });
    render(true);
  }
  var resizeTimer = 0;
  window.addEventListener('resize', function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(layout, 100);
  });
  layout();

  // A small read-only handle for tests and for the console.
  window.bursarReplay = {
    ready: true,
    charts: charts.length,
    index: index,
    time: function () { return timeAt(index()); },
    playing: function () { return state.playing; },
    cursorX: function () { return charts[0].x(timeAt(index())); }
  };
})();
