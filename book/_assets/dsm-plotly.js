// Draw the book's plotly figures (dsmlib.figures.render): load plotly.js only on pages that
// have a figure, after the page has painted, then draw each figure from its embedded JSON.
// Explorers (dsmlib.figures.common.state_explorer, and the nested drop-downs of
// dsmlib.figures.remark3_valley.nested_explorer) get one more thing: when a drop-down
// changes, the slider keeps its position instead of jumping back to its first step.
(function () {
  "use strict";
  var me = document.currentScript;
  var base = me ? me.src.replace(/[^\/]*$/, "") : "_static/";

  function visible(grid, state) {
    var v = [];
    var n = grid.n_static || 0;   // traces shown in every state come first
    for (var k = 0; k < n + grid.n_slider * grid.n_menu * grid.n_traces; k++) {
      v.push(k < n || Math.floor((k - n) / grid.n_traces) === state);
    }
    return v;
  }

  function composeControls(div, grid) {
    // grid.menus (nested drop-downs, dsmlib.figures.remark3_valley.nested_explorer): one size
    // per drop-down, first slowest; choosing in one resets those after it.
    var sizes = grid.menus || [grid.n_menu];
    var chosen = sizes.map(function () { return 0; });
    var position = 0;
    div.on("plotly_sliderchange", function (e) { position = e.slider.active; });
    div.on("plotly_buttonclicked", function (e) {
      var m = (e.menu && e.menu._index) || 0;
      chosen[m] = e.active;
      for (var j = m + 1; j < sizes.length; j++) { chosen[j] = 0; }
      var state = 0;
      for (var i = 0; i < sizes.length; i++) { state = state * sizes[i] + chosen[i]; }
      window.setTimeout(function () {
        window.Plotly.update(div, {visible: visible(grid, state * grid.n_slider + position)},
                             {"sliders[0].active": position});
      }, 0);
    });
  }

  // ---- Figures that fit their width: a phone stacks a figure's subplots, and no two texts
  // of a figure overlap (ticks are thinned, a legend moves below what it covered).

  // Narrower than this, a figure shows its subplots one under another at the full width (side
  // by side on a phone, each panel got ~100 px and their titles, ticks and legends collided).
  var STACK_BELOW = 600;
  var MARGIN = {l: 80, r: 80, t: 100, b: 80};     // plotly's defaults

  function r3(v) { return Math.round(v * 1000) / 1000; }

  function panelsOf(layout) {
    var panels = [];
    Object.keys(layout).forEach(function (xk) {
      var xa = layout[xk];
      if (!/^xaxis\d*$/.test(xk) || !xa || !xa.domain || !xa.anchor || xa.anchor === "free") { return; }
      var yk = "yaxis" + xa.anchor.slice(1), ya = layout[yk];
      if (!ya || !ya.domain || ya.overlaying) { return; }
      panels.push({xk: xk, yk: yk, xa: xa, ya: ya});
    });
    return panels;
  }

  // The layout with its subplot columns stacked into one column (column by column, each
  // column's rows in order, so that panels sharing an x axis stay together), or null.
  function stacked(layout, width) {
    if (width >= STACK_BELOW || (layout.meta && layout.meta.dsm_grid)) { return null; }
    var panels = panelsOf(layout);
    var cols = [];
    panels.forEach(function (p) { if (cols.indexOf(r3(p.xa.domain[0])) < 0) { cols.push(r3(p.xa.domain[0])); } });
    if (cols.length < 2) { return null; }
    var m = Object.assign({}, MARGIN, layout.margin || {});
    var height = layout.height || 450, plotH = height - m.t - m.b;
    panels.sort(function (a, b) {
      return (a.xa.domain[0] - b.xa.domain[0]) || (b.ya.domain[1] - a.ya.domain[1]);
    });
    var notes = (layout.annotations || []).map(function (a) { return Object.assign({}, a); });
    var titleOf = panels.map(function (p) {
      var cx = (p.xa.domain[0] + p.xa.domain[1]) / 2;
      return notes.filter(function (a) {
        return a.xref === "paper" && a.yref === "paper" && Math.abs(a.x - cx) < 0.02
          && Math.abs(a.y - p.ya.domain[1]) < 0.03;
      });
    });
    var heights = panels.map(function (p) {
      return Math.max(170, Math.min(280, (p.ya.domain[1] - p.ya.domain[0]) * plotH));
    });
    var gaps = panels.map(function (p, i) {
      if (i === panels.length - 1) { return 0; }
      var ticks = p.xa.showticklabels !== false, title = p.xa.title && p.xa.title.text;
      return 16 + (ticks ? 30 : 0) + (title ? 26 : 0) + (titleOf[i + 1].length ? 26 : 0);
    });
    var total = heights.reduce(function (a, b) { return a + b; }, 0)
      + gaps.reduce(function (a, b) { return a + b; }, 0);
    var out = Object.assign({}, layout, {annotations: notes, height: Math.round(total + m.t + m.b)});
    var top = total;
    panels.forEach(function (p, i) {
      var yd = [r3((top - heights[i]) / total), r3(top / total)];
      out[p.xk] = Object.assign({}, p.xa, {domain: [0, 1]});
      out[p.yk] = Object.assign({}, p.ya, {domain: yd});
      titleOf[i].forEach(function (a) { a.x = 0.5; a.xanchor = "center"; a.y = yd[1]; });
      top -= heights[i] + gaps[i];
    });
    if (layout.legend && typeof layout.legend.y === "number" && layout.legend.y < 0
        && layout.legend.yref !== "container") {
      out.legend = Object.assign({}, layout.legend, {y: layout.legend.y * plotH / total});
    }
    return out;
  }

  function shown(el, gd) {
    for (var e = el; e && e !== gd; e = e.parentElement) {
      var st = window.getComputedStyle(e);
      if (st.display === "none" || st.visibility === "hidden" || Number(st.opacity) === 0) { return false; }
    }
    return true;
  }

  // Every visible text of a figure: its box and what it belongs to (an axis's ticks, the
  // legend, or another text).
  function texts(gd) {
    var out = [];
    gd.querySelectorAll("svg text").forEach(function (t) {
      if (!(t.textContent || "").trim() || !shown(t, gd)) { return; }
      var r = t.getBoundingClientRect();
      if (r.width < 1 || r.height < 1) { return; }
      var g = t.closest("g[class]"), cls = t.getAttribute("class") || (g && g.getAttribute("class")) || "";
      var tick = /(^|\s)([xy]\d*)tick(\s|$)/.exec(cls), title = /^([xy]\d*)title$/.exec(cls);
      var note = t.closest(".annotation");
      out.push({box: r, owner: tick ? tick[2] : (t.closest(".legend") ? "legend" : "text"),
                size: parseFloat(window.getComputedStyle(t).fontSize) || 12,
                font: title ? axisName(title[1]) + ".title.font.size"
                  : note ? "annotations[" + note.getAttribute("data-index") + "].font.size" : null});
    });
    return out;
  }

  function overlap(a, b) {
    return Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1
      && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
  }

  function axisName(id) { return (id[0] === "x" ? "xaxis" : "yaxis") + id.slice(1); }

  // Fewer ticks on an axis: every other one of explicit ticks; on a log axis the digits 2
  // and 5 instead of every digit, then powers of ten only; else half as many.
  function thinner(gd, id, count) {
    var k = axisName(id), ax = gd._fullLayout[k], upd = {};
    if (!ax) { return upd; }
    if (ax.tickmode === "array" && ax.tickvals && ax.tickvals.length > 1) {
      var keep = function (v, i) { return i % 2 === 0; };
      upd[k + ".tickvals"] = [Array.prototype.filter.call(ax.tickvals, keep)];
      if (ax.ticktext) { upd[k + ".ticktext"] = [Array.prototype.filter.call(ax.ticktext, keep)]; }
    } else if (ax.type === "log" && ax.dtick === "D1") {
      upd[k + ".tickmode"] = "linear";
      upd[k + ".dtick"] = "D2";
    } else if (ax.type === "log" && ax.dtick === "D2") {
      upd[k + ".tickmode"] = "auto";
      upd[k + ".nticks"] = Math.max(2, Math.ceil(Math.abs(ax.range[1] - ax.range[0])) + 1);
    } else {
      upd[k + ".tickmode"] = "auto";
      upd[k + ".nticks"] = Math.max(2, Math.floor(Math.min(count, ax.nticks || count) / 2));
    }
    return upd;
  }

  function untangle(gd, pass) {
    if (pass >= 4) { return Promise.resolve(); }
    var all = texts(gd), upd = {}, legendDown = 0, legendTop = Infinity;
    all.forEach(function (t) { if (t.owner === "legend") { legendTop = Math.min(legendTop, t.box.top); } });
    for (var i = 0; i < all.length; i++) {
      for (var j = i + 1; j < all.length; j++) {
        var a = all[i], b = all[j];
        if (!overlap(a.box, b.box) || (a.owner === "legend" && b.owner === "legend")) { continue; }
        if (a.owner === "legend" || b.owner === "legend") {
          var other = a.owner === "legend" ? b : a;
          legendDown = Math.max(legendDown, other.box.bottom + 6 - legendTop);
        } else if (a.owner !== "text" && b.owner !== "text" && a.owner[0] !== b.owner[0]) {
          // an x and a y tick at a corner: the x axis's labels move down, clear of the other
          var xk = axisName(a.owner[0] === "x" ? a.owner : b.owner) + ".ticklabelstandoff";
          var down = Math.ceil(Math.min(a.box.bottom, b.box.bottom) - Math.max(a.box.top, b.box.top)) + 2;
          var had = gd._fullLayout[axisName(a.owner[0] === "x" ? a.owner : b.owner)];
          upd[xk] = Math.max(upd[xk] || 0, ((had && had.ticklabelstandoff) || 0) + down);
        } else if (a.owner !== "text" || b.owner !== "text") {
          // ticks of one axis (or a tick under a text): thin that axis
          var id = a.owner === "text" ? b.owner : a.owner;
          var n = all.filter(function (t) { return t.owner === id; }).length;
          if (!(axisName(id) + ".nticks" in upd) && !(axisName(id) + ".tickvals" in upd)) {
            Object.assign(upd, thinner(gd, id, n));
          }
        }
      }
    }
    // two titles or annotations on top of each other (say, the x titles of two columns) get
    // smaller fonts, each shrunk by the overlap (about their centres, that clears it)
    for (var p = 0; p < all.length; p++) {
      for (var q = p + 1; q < all.length; q++) {
        var s1 = all[p], s2 = all[q];
        if (!s1.font || !s2.font || !overlap(s1.box, s2.box)) { continue; }
        var ov = Math.min(s1.box.right, s2.box.right) - Math.max(s1.box.left, s2.box.left);
        [s1, s2].forEach(function (t) {
          var size = Math.max(9, Math.floor(t.size * Math.max(0.5, (t.box.width - ov - 4) / t.box.width)));
          upd[t.font] = Math.min(upd[t.font] || size, size);
        });
      }
    }
    // a title or annotation wider (or, turned, taller) than the figure gets a smaller font
    var fig = gd.getBoundingClientRect();
    all.forEach(function (t) {
      var over = Math.max(fig.left - t.box.left, t.box.right - fig.right,
                          fig.top - t.box.top, t.box.bottom - fig.bottom);
      if (!t.font || over <= 1) { return; }
      var tall = t.box.height > t.box.width, len = tall ? t.box.height : t.box.width;
      var room = (tall ? fig.height : fig.width) - 8;
      upd[t.font] = Math.max(9, Math.floor(t.size * Math.min(room / len, 0.95)));
    });
    var L = gd._fullLayout;
    if (legendDown > 0 && L.legend && L.legend.yref !== "container") {
      upd["legend.y"] = L.legend.y - legendDown / L._size.h;
      upd.height = L.height + legendDown;
      upd["margin.b"] = L.margin.b + legendDown;
    }
    if (!Object.keys(upd).length) { return Promise.resolve(); }
    return window.Plotly.relayout(gd, upd).then(function () {
      gd.style.height = gd._fullLayout.height + "px";
      return untangle(gd, pass + 1);
    });
  }

  function withPlotly(then) {
    if (window.Plotly) { then(); return; }
    var s = document.getElementById("dsm-plotly-js");   // started early in the head (async)
    if (!s) {
      s = document.createElement("script");
      s.src = base + "plotly.min.js";
      s.async = true;
      document.head.appendChild(s);
    }
    s.addEventListener("load", then);
  }

  function draw() {
    var specs = document.querySelectorAll("script.dsm-plotly-data");
    if (!specs.length) { return; }
    withPlotly(function () {
      // One figure at a time, in reading order, yielding to the browser in between so the
      // page stays responsive and the first figures are usable before the last is drawn.
      var chain = Promise.resolve();
      specs.forEach(function (node) {
        chain = chain.then(function () {
          var spec = JSON.parse(node.textContent);
          // the placeholder just before the JSON (ids are content hashes: two equal
          // figures on a page share one)
          var prev = node.previousElementSibling, id = node.getAttribute("data-target");
          var div = prev && prev.id === id ? prev : document.getElementById(id);
          if (!div) { return null; }
          var layout = stacked(spec.layout, div.clientWidth) || spec.layout;
          if (layout.height) { div.style.height = layout.height + "px"; }
          return window.Plotly.newPlot(div, spec.data, layout, spec.config).then(function () {
            return untangle(div, 0);
          }).then(function () {
            var grid = spec.layout.meta && spec.layout.meta.dsm_grid;
            if (grid) { composeControls(div, grid); }
            div.setAttribute("data-dsm-drawn", String(performance.now() / 1000));
            return new Promise(function (res) { window.setTimeout(res, 0); });
          });
        });
      });
      chain.then(function () {
        document.documentElement.setAttribute("data-dsm-plotly", "ready");
      });
    });
  }

  // A deferred script runs once the document is parsed: the figures' data is all there.
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
})();
