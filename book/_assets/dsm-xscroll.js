// A table wider than its column scrolls sideways in its own box, and its only scrollbar was
// at its bottom, thousands of pixels down for a tall table (and hidden on a phone until one
// touches it). Each such box gets, right above it, a bar that says so and scrolls with it:
// drag or swipe either one and the other follows. Boxes that stop overflowing (a wider
// window) lose their bar. A display equation too wide for a phone scrolls in its own box too
// (custom.css, dsm-fit-math.js) and gets the same bar: without it, an equation simply ended
// mid-formula at the page's edge. An equation's box that MathJax renders anew (its menu's
// settings) is a new element: its bar is made anew for it, linked to the box that shows.
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
    art.querySelectorAll('mjx-container[display="true"]').forEach(function (m) {
      var o = window.getComputedStyle(m).overflowX;
      if ((o === "auto" || o === "scroll") && found.indexOf(m) < 0) { found.push(m); }
    });
    return found;
  }
  // where the bar goes: right above the box; for an equation, above its div.math (a flex row
  // with its number: a bar inside it squeezed the equation to nothing)
  function anchorOf(box) {
    var up = box.parentElement;
    return box.tagName === "MJX-CONTAINER" && up && up.matches("div.math") ? up : box;
  }
  // the track as wide as the box and its content as wide as the box's, so that both scroll
  // the same distance (an equation's box is narrower than the column: its number sits beside)
  function size(track, box) {
    track.style.width = box.clientWidth + "px";
    track.firstChild.style.width = box.scrollWidth + "px";
  }
  function link(box) {
    var anchor = anchorOf(box), bar = anchor.previousElementSibling;
    if (bar && bar.classList.contains("dsm-xscroll")) {
      if (bar.dsmBox === box) {
        size(bar.querySelector(".dsm-xscroll-track"), box);
        return;
      }
      bar.remove();               // the bar of a box that is gone: it scrolled nothing
    }
    bar = document.createElement("div");
    bar.dsmBox = box;
    bar.className = "dsm-xscroll";
    bar.setAttribute("aria-hidden", "true");
    bar.innerHTML = '<span class="dsm-xscroll-hint">\u2194 wider than the page: scroll sideways' +
                    '</span><div class="dsm-xscroll-track"><div></div></div>';
    var track = bar.querySelector(".dsm-xscroll-track");
    size(track, box);
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
    anchor.parentNode.insertBefore(bar, anchor);
  }
  function update() {
    boxes().forEach(function (box) {
      if (wide(box)) {
        link(box);
      } else {
        var bar = anchorOf(box).previousElementSibling;
        if (bar && bar.classList.contains("dsm-xscroll")) { bar.remove(); }
      }
    });
  }
  var timer = null;
  function later() { window.clearTimeout(timer); timer = window.setTimeout(update, 150); }
  // the column changing width with no window resize (a sidebar opening); its height changes
  // nothing here
  function watchColumn(art) {
    var width = null;
    new ResizeObserver(function (entries) {
      var w = Math.round(entries[0].contentRect.width);
      if (width !== null && w !== width) { later(); }
      width = w;
    }).observe(art);
  }
  function start() {
    update();
    var art = document.querySelector("article");
    if (art && window.ResizeObserver) { watchColumn(art); }
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
  // (typeset formulas change the tables' widths: the fitting after MathJax's tells us below)
  window.addEventListener("load", update);
  window.addEventListener("resize", later);
  document.addEventListener("toggle", later, true);   // a table in a folded section opens
  document.addEventListener("dsm-math-fitted", update);  // equations scaled or left to scroll
})();
