// Draws each scenario's timeline as SVG from the JSON beside it. Text
// from the evidence only ever reaches the page through textContent and
// setAttribute, never as markup.
(function () {
  'use strict';
  // The SVG namespace, taken from the page's own <svg> element so that
  // the page names no URL.
  var NS = document.getElementById('tl-defs').namespaceURI;
  var LABEL_W = 150, PAD_R = 14, AXIS_H = 22, LANE_GAP = 6;
  var ROW_H = { server: 16, client: 13 };
  var DIAMONDS = { EXPIRED: 1, DEDUP_HIT: 1, DEDUP_WAIT_EXPIRED: 1, KEY_CONFLICT: 1 };
  var TRIANGLES = { FAULT: 1, QUEUE_FULL: 1 };

  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    if (parent) parent.appendChild(e);
    return e;
  }

  function tip(e, text) {
    el('title', {}, e).textContent = text;
  }

  function fmt(ms) {
    if (Math.abs(ms) < 1000) return (Math.round(ms * 1000) / 1000) + ' ms';
    return (Math.round(ms) / 1000) + ' s';
  }

  // niceStep returns a round tick interval giving about n ticks over span.
  function niceStep(span, n) {
    var raw = span / n, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }

  function rowH(lane) { return ROW_H[lane.kind] || 13; }
  function laneH(lane) { return lane.rows.length * rowH(lane) + 4; }

  function barClass(b) {
    if (b.unknown) return 'unknown';
    if (b.class === 'NOT_SENT') return 'notsent';
    if (b.class === 'NOT_EXECUTED') return 'notexec';
    if (b.class === 'FINAL') return b.status === 'OK' ? 'ok' : 'final-err';
    return 'other';
  }

  function barText(b) {
    var s = 'client ' + b.client + ' call ' + b.call + ' attempt ' + b.attempt + ': ' + b.method;
    if (b.key) s += ' key=' + b.key;
    s += '\n' + b.outcome + (b.status ? ' ' + b.status : '') + ' (' + b.class + ')';
    if (b.unknown) s += ': outcome unknown, it may or may not have executed';
    s += '\nrequest id=' + b.id + ' budget=' + b.budget + 'ms';
    if (b.addr) s += ' addr=' + b.addr;
    s += '\n' + fmt(b.start) + ' to ' + fmt(b.end) + ' (' + fmt(b.end - b.start) + ')';
    if (b.backoff) s += ', then backoff ' + b.backoff + ' ms';
    if (b.err) s += '\nerr: ' + b.err;
    return s;
  }

  function draw(host, tl, width) {
    var box = host.querySelector('.tl-scroll');
    while (box.firstChild) box.removeChild(box.firstChild);
    var plotW = Math.max(width - LABEL_W - PAD_R, 120);
    var W = LABEL_W + plotW + PAD_R;
    var x = function (t) { return LABEL_W + t / tl.span * plotW; };
    var H = AXIS_H + 4;
    tl.lanes.forEach(function (l) { H += laneH(l) + LANE_GAP; });
    var svg = el('svg', { width: W, height: H, 'class': 'tl-svg', role: 'img' }, box);
    svg.setAttribute('aria-label', 'timeline of ' + host.getAttribute('data-case'));

    var step = niceStep(tl.span, Math.max(2, Math.floor(plotW / 110)));
    for (var t = 0; t <= tl.span * 1.0001; t += step) {
      el('line', { x1: x(t), x2: x(t), y1: AXIS_H - 4, y2: H, 'class': 'grid' }, svg);
      if (x(t) + 50 <= W) el('text', { x: x(t) + 2, y: AXIS_H - 8, 'class': 'axis-label' }, svg).textContent = fmt(t);
    }

    var y = AXIS_H, bars = 0, marks = 0, crashes = [];
    tl.lanes.forEach(function (lane) {
      var rh = rowH(lane), h = laneH(lane);
      var g = el('g', { 'class': 'lane lane-' + lane.kind, 'data-lane': lane.name }, svg);
      el('rect', { x: 0, y: y, width: W, height: h, 'class': 'lane-bg' }, g);
      var label = el('text', { x: 4, y: y + 12, 'class': 'lane-label' }, g);
      label.textContent = lane.name;
      if (lane.source) tip(label, lane.source);
      lane.rows.forEach(function (r, i) {
        if (r) el('text', { x: LABEL_W - 4, y: y + 2 + (i + 1) * rh - 4, 'text-anchor': 'end', 'class': 'row-label' }, g).textContent = r;
      });
      var top = function (row) { return y + 2 + row * rh; };

      lane.densities.forEach(function (d) {
        var most = Math.max.apply(null, d.counts);
        d.counts.forEach(function (c, i) {
          if (!c) return;
          var x0 = x(i * d.width), x1 = Math.max(x((i + 1) * d.width), x0 + 1);
          var hh = Math.max(1, (rh - 3) * c / most);
          var r = el('rect', { x: x0, y: top(d.row) + rh - 1 - hh, width: x1 - x0, height: hh, 'class': 'dens ev-' + d.name }, g);
          tip(r, d.name + ': ' + c + ' between ' + fmt(i * d.width) + ' and ' + fmt((i + 1) * d.width));
        });
      });

      lane.marks.forEach(function (m) {
        var mx = x(m.t), my = top(m.row), s = (rh - 2) / 2, shape;
        var cls = 'mk ev-' + m.name + (m.ctl ? ' ctl' : '');
        if (DIAMONDS[m.name]) {
          shape = el('path', { d: 'M' + mx + ' ' + (my + 1) + ' l' + s + ' ' + s + ' l' + (-s) + ' ' + s + ' l' + (-s) + ' ' + (-s) + ' z', 'class': cls }, g);
        } else if (TRIANGLES[m.name]) {
          shape = el('path', { d: 'M' + mx + ' ' + (my + 1) + ' l' + s + ' ' + (2 * s) + ' l' + (-2 * s) + ' 0 z', 'class': cls }, g);
        } else if (m.name === 'CRASH') {
          shape = el('rect', { x: mx - 2, y: my, width: 4, height: rh, 'class': cls }, g);
          crashes.push(mx);
        } else {
          shape = el('rect', { x: mx - 1, y: my + 1, width: 2, height: rh - 2, 'class': cls }, g);
        }
        if (m.id && !m.ctl) shape.setAttribute('data-id', m.id);
        tip(shape, fmt(m.t) + '  ' + m.name + (m.text ? ' ' + m.text : '') + (m.ctl ? '\n(control connection: the scenario reading counters)' : ''));
        marks++;
      });

      lane.bars.forEach(function (b) {
        var by = top(b.row), x0 = x(b.start), x1 = Math.max(x(b.end), x0 + 2);
        if (b.backoff > 0) {
          el('line', { x1: x1, x2: x(b.end + b.backoff), y1: by + rh / 2, y2: by + rh / 2, 'class': 'backoff' }, g);
        }
        var r = el('rect', { x: x0, y: by + 1, width: x1 - x0, height: rh - 2, 'class': 'bar ' + barClass(b), 'data-attempt': b.attempt }, g);
        if (b.id) r.setAttribute('data-id', b.id);
        tip(r, barText(b));
        if (x1 - x0 > 80) {
          el('text', { x: x0 + 3, y: by + rh - 3, 'class': 'bar-label' }, g).textContent =
            'a' + b.attempt + ' ' + (b.outcome === 'RESPONSE' ? b.status : b.outcome);
        }
        bars++;
      });
      y += h + LANE_GAP;
    });
    crashes.forEach(function (cx) {
      el('line', { x1: cx, x2: cx, y1: AXIS_H, y2: H, 'class': 'crash-line' }, svg);
    });

    // Hovering a bar or mark outlines everything with its request ID.
    svg.addEventListener('mouseover', function (e) {
      var id = e.target.getAttribute && e.target.getAttribute('data-id');
      if (!id) return;
      svg.querySelectorAll('[data-id="' + id + '"]').forEach(function (n) { n.classList.add('hl'); });
    });
    svg.addEventListener('mouseout', function () {
      svg.querySelectorAll('.hl').forEach(function (n) { n.classList.remove('hl'); });
    });

    host.setAttribute('data-drawn-bars', bars);
    host.setAttribute('data-drawn-marks', marks);
    host.setAttribute('data-rendered', 'true');
  }

  document.querySelectorAll('.timeline').forEach(function (host) {
    var zoom = 1, tl;
    var base = function () { return Math.max(host.querySelector('.tl-scroll').clientWidth - 2, 600); };
    try {
      tl = JSON.parse(host.querySelector('.tl-data').textContent);
      draw(host, tl, base());
    } catch (err) {
      host.setAttribute('data-error', String(err));
      host.querySelector('.tl-scroll').textContent = 'timeline not drawn: ' + err;
      return;
    }
    var wrap = host.closest('.tl-wrap');
    wrap.querySelectorAll('[data-zoom]').forEach(function (btn) {
      btn.addEventListener('click', function () {
        var w = base();
        var z = btn.getAttribute('data-zoom');
        zoom = z === 'in' ? Math.min(zoom * 2, 256) : z === 'out' ? Math.max(zoom / 2, 1) : 1;
        draw(host, tl, w * zoom);
      });
    });
  });
  document.body.setAttribute('data-timelines-drawn', document.querySelectorAll('.timeline[data-rendered]').length);
})();
