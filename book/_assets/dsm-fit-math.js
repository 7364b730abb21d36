// A display equation wider than its column (MathJax 3 cannot break lines) is scaled down
// only as far as it stays readable (to 90 %); one still too wide keeps its full size and
// scrolls sideways in its own box (shrunk to fit a phone, B(20) was half its size), under the
// "scroll sideways" bar of dsm-xscroll.js (told by the event "dsm-math-fitted"). An
// inline formula wider than its paragraph is scaled down too (to 70 % at most); one still too
// wide gets a box of its own that scrolls, instead of widening the page or being cut.
// The formulas are fitted again, at the next frame, whenever their column or an equation's
// box changes width (a window resize, a folded section or a sidebar opening: no window
// resize there) and whenever MathJax renders a formula anew (its menu's settings replace
// the formula's box, whose bar must follow the new one).
// The root element says where the fitting stands, for whoever waits for it (the browser
// tests): data-dsm-math is "pending" until the formulas are fitted, and again from a change
// until they are refitted, then "fitted"; data-dsm-math-fits counts the fittings.
(function () {
  "use strict";
  var MIN_DISPLAY = 90;   // per cent
  var MIN_INLINE = 70;    // per cent
  var root = document.documentElement, fits = 0, queued = false, watching = false;
  root.setAttribute("data-dsm-math", "pending");

  function fitDisplay(el) {
    el.style.fontSize = "";
    el.classList.remove("dsm-wide-math");
    if (el.scrollWidth <= el.clientWidth + 1) { return; }
    var scale = Math.floor(100 * el.clientWidth / el.scrollWidth) - 1;
    if (scale >= MIN_DISPLAY) {
      el.style.fontSize = scale + "%";
      if (el.scrollWidth <= el.clientWidth + 1) { return; }
      el.style.fontSize = "";
    }
    el.classList.add("dsm-wide-math");
  }

  function fitInline(el) {
    el.style.fontSize = "";
    el.classList.remove("dsm-wide-math");
    var box = el.parentElement && el.parentElement.closest("p, li, dd, td, th, div");
    if (!box) { return; }
    var room = box.clientWidth, width = el.getBoundingClientRect().width;
    if (width <= room + 1) { return; }
    el.style.fontSize = Math.max(MIN_INLINE, Math.floor(100 * room / width) - 1) + "%";
    if (el.getBoundingClientRect().width > room + 1) { el.classList.add("dsm-wide-math"); }
  }

  function fit() {
    queued = false;
    document.querySelectorAll('mjx-container[display="true"]').forEach(fitDisplay);
    document.querySelectorAll('mjx-container:not([display="true"])').forEach(fitInline);
    // dsm-xscroll.js puts its "scroll sideways" bar above each equation still too wide
    document.dispatchEvent(new Event("dsm-math-fitted"));
    fits += 1;
    root.setAttribute("data-dsm-math-fits", String(fits));
    root.setAttribute("data-dsm-math", "fitted");
    watch();
  }

  // one fitting at the next frame, however many changes come before it
  function soon() {
    root.setAttribute("data-dsm-math", "pending");
    if (queued) { return; }
    queued = true;
    window.requestAnimationFrame(fit);
  }

  // the boxes whose width decides the formulas': the article (the column) and each display
  // equation's own box
  function boxesOf(node) {
    var found = [];
    if (node.nodeType !== 1 || node.closest(".js-plotly-plot")) { return found; }
    if (node.matches("article")) { found.push(node); }
    if (node.matches('mjx-container[display="true"]')) { found.push(node.parentElement); }
    node.querySelectorAll('article, mjx-container[display="true"]').forEach(function (el) {
      found.push(el.tagName === "ARTICLE" ? el : el.parentElement);
    });
    return found.filter(Boolean);
  }

  function watch() {
    if (watching || !window.ResizeObserver || !window.MutationObserver) { return; }
    watching = true;
    var widths = new WeakMap();
    var sizes = new ResizeObserver(function (entries) {
      var changed = false;
      entries.forEach(function (e) {
        var w = Math.round(e.contentRect.width), was = widths.get(e.target);
        widths.set(e.target, w);
        if (was !== undefined && was !== w) { changed = true; }
      });
      if (changed) { soon(); }
    });
    boxesOf(document.body).forEach(function (el) { sizes.observe(el); });
    new MutationObserver(function (records) {
      var added = false;
      records.forEach(function (r) {
        r.addedNodes.forEach(function (n) {
          var boxes = boxesOf(n);
          boxes.forEach(function (el) { sizes.observe(el); });
          if (n.nodeName === "MJX-CONTAINER" || boxes.length) { added = true; }
        });
      });
      if (added) { soon(); }
    }).observe(document.body, {childList: true, subtree: true});
  }

  function whenTypeset() {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      MathJax.startup.promise.then(fit);
    } else if (!window.MathJax && !document.querySelector('script[src*="mathjax"]')) {
      fit();     // a page without MathJax: no formula to wait for
    } else {
      window.setTimeout(whenTypeset, 100);
    }
  }

  window.addEventListener("resize", soon);   // where ResizeObserver is missing
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", whenTypeset);
  } else {
    whenTypeset();
  }
})();
