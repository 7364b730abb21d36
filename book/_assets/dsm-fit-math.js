// Display equations that are wider than their column are scaled down to fit it (MathJax 3
// cannot break lines), so no equation scrolls or is clipped, on a desktop or a phone.
(function () {
  "use strict";
  function fit() {
    document.querySelectorAll('mjx-container[display="true"]').forEach(function (el) {
      el.style.fontSize = "";
      var scale = 100;
      for (var pass = 0; pass < 4 && el.scrollWidth > el.clientWidth + 1 && scale > 50; pass++) {
        scale = Math.max(50, Math.floor(scale * el.clientWidth / el.scrollWidth) - 1);
        el.style.fontSize = scale + "%";
      }
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
