// Display equations that are wider than their column are scaled down to fit it (MathJax 3
// cannot break lines), so no equation is clipped, on a desktop or a phone; one still too wide
// at half size scrolls in its own box. An
// inline formula wider than its paragraph is scaled down too (to 70 % at most); one still too
// wide gets a box of its own that scrolls, instead of widening the page or being cut.
(function () {
  "use strict";
  function fit() {
    document.querySelectorAll('mjx-container[display="true"]').forEach(function (el) {
      el.style.fontSize = "";
      el.classList.remove("dsm-wide-math");
      var scale = 100;
      for (var pass = 0; pass < 4 && el.scrollWidth > el.clientWidth + 1 && scale > 50; pass++) {
        scale = Math.max(50, Math.floor(scale * el.clientWidth / el.scrollWidth) - 1);
        el.style.fontSize = scale + "%";
      }
      if (el.scrollWidth > el.clientWidth + 1) { el.classList.add("dsm-wide-math"); }
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
