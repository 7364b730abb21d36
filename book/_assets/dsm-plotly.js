// Draw the book's plotly figures (dsmlib.figures.render): load plotly.js only on pages that
// have a figure, after the page has painted, then draw each figure from its embedded JSON.
// Explorers (dsmlib.figures.common.state_explorer) get one more thing: when the drop-down
// changes, the slider keeps its position instead of jumping back to its first step.
(function () {
  "use strict";
  var me = document.currentScript;
  var base = me ? me.src.replace(/[^\/]*$/, "") : "_static/";

  function visible(grid, state) {
    var v = [];
    for (var k = 0; k < grid.n_slider * grid.n_menu * grid.n_traces; k++) {
      v.push(Math.floor(k / grid.n_traces) === state);
    }
    return v;
  }

  function composeControls(div, grid) {
    var position = 0;
    div.on("plotly_sliderchange", function (e) { position = e.slider.active; });
    div.on("plotly_buttonclicked", function (e) {
      var menu = e.active;
      window.setTimeout(function () {
        window.Plotly.update(div, {visible: visible(grid, menu * grid.n_slider + position)},
                             {"sliders[0].active": position});
      }, 0);
    });
  }

  function draw() {
    var specs = document.querySelectorAll("script.dsm-plotly-data");
    if (!specs.length) { return; }
    var s = document.createElement("script");
    s.src = base + "plotly.min.js";
    s.async = true;
    s.onload = function () {
      var pending = [];
      specs.forEach(function (node) {
        var spec = JSON.parse(node.textContent);
        var div = document.getElementById(node.getAttribute("data-target"));
        if (!div) { return; }
        pending.push(window.Plotly.newPlot(div, spec.data, spec.layout, spec.config)
          .then(function () {
            var grid = spec.layout.meta && spec.layout.meta.dsm_grid;
            if (grid) { composeControls(div, grid); }
          }));
      });
      Promise.all(pending).then(function () {
        document.documentElement.setAttribute("data-dsm-plotly", "ready");
      });
    };
    document.head.appendChild(s);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { window.setTimeout(draw, 0); });
  } else {
    window.setTimeout(draw, 0);
  }
})();
