// A display equation wider than its column (MathJax 3 cannot break lines) is scaled down
// only as far as it stays readable (to 90 %); one still too wide keeps its full size and
// scrolls sideways in its own box (shrunk to fit a phone, B(20) was half its size), under the
// "scroll sideways" bar of dsm-xscroll.js (told by the event "dsm-math-fitted"). An
// inline formula wider than its paragraph is scaled down too (to 70 % at most); one still too
// wide gets a box of its own that scrolls, instead of widening the page or being cut.
(function () {
  "use strict";
  var MIN_DISPLAY = 90;   // per cent
  function fit() {
    document.querySelectorAll('mjx-container[display="true"]').forEach(function (el) {
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
    });
    document.querySelectorAll('mjx-container:not([display="true"])').forEach(function (el) {
      el.style.fontSize = "";
      el.classList.remove("dsm-wide-math");
      var box = el.parentElement && el.parentElement.closest("p, li, dd, td, th, div");
      if (!box) { return; }
      var room = box.clientWidth, width = el.getBoundingClientRect().width;
      if (width <= room + 1) { return; }
      var scale = Math.max(70, Math.floor(100 * room / width) - 1);
      el.style.fontSize = scale + "%";
      if (el.getBoundingClientRect().width > room + 1) { el.classList.add("dsm-wide-math"); }
    });
    // dsm-xscroll.js puts its "scroll sideways" bar above each equation still too wide
    document.dispatchEvent(new Event("dsm-math-fitted"));
  }
  function whenTypeset() {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      MathJax.startup.promise.then(fit);
    } else {
      window.setTimeout(whenTypeset, 100);
    }
  }
  window.addEventListener("resize", function () { window.clearTimeout(fit.t); fit.t = window.setTimeout(fit, 150); });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", whenTypeset);
  } else {
    whenTypeset();
  }
})();
