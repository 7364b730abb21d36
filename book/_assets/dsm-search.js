/* The search page's result snippets read the page's own text (issue 71, item 8).
   Sphinx's searchtools.js takes a snippet from the text of the result page's [role="main"],
   which in this theme holds the article's header too: its download buttons and its contents
   list, so that snippets began ".ipynb .pdf Noisy self-distillation…". The snippet's reader
   here reads the article alone (article.bd-article), without the machinery banner a smoke
   build puts at the top of every page, and falls back to Sphinx's own reader on a page that
   has no article. A snippet that starts where the page's text starts opens without "...":
   Sphinx wrote it before every snippet whose page did not contain the searched word itself
   (a stemmed match: "noisy" found by "noise"). Loaded on the search page only
   (dsmlib.book.site.sphinx_ext), after searchtools.js (defer). */
(() => {
  "use strict";
  if (typeof Search === "undefined" || typeof Search.htmlToText !== "function"
      || typeof Search.makeSearchSummary !== "function") return;
  const sphinxReader = Search.htmlToText, sphinxSummary = Search.makeSearchSummary;
  const NOT_TEXT = ".headerlink, script, style, .dsm-machinery-banner";
  let lastText = "";           // the text the summary below was cut from
  Search.htmlToText = (htmlString, anchor) => {
    const doc = new DOMParser().parseFromString(htmlString, "text/html");
    const article = doc.querySelector("article.bd-article");
    if (!article) return (lastText = sphinxReader(htmlString, anchor));
    article.querySelectorAll(NOT_TEXT).forEach((el) => el.remove());
    const part = anchor ? article.querySelector(anchor) : null;
    return (lastText = (part || article).textContent);
  };
  Search.makeSearchSummary = (htmlText, keywords, anchor) => {
    const summary = sphinxSummary(htmlText, keywords, anchor);
    if (summary && summary.textContent.startsWith("...")) {
      const rest = summary.textContent.slice(3);
      if (lastText.trim().startsWith(rest.slice(0, 60).replace(/\.\.\.$/, ""))) summary.textContent = rest;
    }
    return summary;
  };
})();
