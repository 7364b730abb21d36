// A table wider than its column scrolls sideways in its own box, and its only scrollbar was
// at its bottom, thousands of pixels down for a tall table (and hidden on a phone until one
// touches it). Each such box gets, right above it, a bar that says so and scrolls with it:
// drag or swipe either one and the other follows. Boxes that stop overflowing (a wider
// window) lose their bar.
(function () {
  "use strict";
  function wide(box) { return box.scrollWidth > box.clientWidth + 1 && box.offsetParent !== null; }
  // the boxes that scroll a table sideways: each table's nearest box (itself included) whose
  // overflow-x scrolls (the theme's table container, a cell output, a data table on a phone)
  function boxes() {
    var art = document.querySelector("article"), found = [];
    if (!art) { return found; }
    art.querySelectorAll("table").forEach(function (t) {
      for (var e = t; e && e !== art; e = e.parentElement) {
        var o = window.getComputedStyle(e).overflowX;
        if (o === "auto" || o === "scroll") {
          if (found.indexOf(e) < 0) { found.push(e); }
          return;
        }
      }
    });
    return found;
  }
  function link(box) {
    var bar = box.previousElementSibling;
    if (bar && bar.classList.contains("dsm-xscroll")) {
      bar.querySelector(".dsm-xscroll-track > div").style.width = box.scrollWidth + "px";
      return;
    }
    bar = document.createElement("div");
    bar.className = "dsm-xscroll";
    bar.setAttribute("aria-hidden", "true");
    bar.innerHTML = '<span class="dsm-xscroll-hint">\u2194 wider than the page: scroll sideways' +
                    '</span><div class="dsm-xscroll-track"><div></div></div>';
    var track = bar.querySelector(".dsm-xscroll-track");
    track.firstChild.style.width = box.scrollWidth + "px";
    var busy = false;
    function follow(from, to) {
      return function () {
        if (busy) { return; }
        busy = true;
        to.scrollLeft = from.scrollLeft;
        window.requestAnimationFrame(function () { busy = false; });
      };
    }
    track.addEventListener("scroll", follow(track, box), {passive: true});
    box.addEventListener("scroll", follow(box, track), {passive: true});
    box.parentNode.insertBefore(bar, box);
  }
  function update() {
    boxes().forEach(function (box) {
      if (wide(box)) {
        link(box);
      } else if (box.previousElementSibling &&
                 box.previousElementSibling.classList.contains("dsm-xscroll")) {
        box.previousElementSibling.remove();
      }
    });
  }
  var timer = null;
  function later() { window.clearTimeout(timer); timer = window.setTimeout(update, 150); }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", update);
  } else {
    update();
  }
  window.addEventListener("load", function () {
    update();
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      MathJax.startup.promise.then(later);     // typeset formulas change the tables' widths
    }
  });
  window.addEventListener("resize", later);
  document.addEventListener("toggle", later, true);   // a table in a folded section opens
})();
