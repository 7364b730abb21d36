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
          var div = document.getElementById(node.getAttribute("data-target"));
          if (!div) { return null; }
          return window.Plotly.newPlot(div, spec.data, spec.layout, spec.config).then(function () {
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
