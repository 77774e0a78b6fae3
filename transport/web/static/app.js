// Tuma dashboard: the little htmx cannot express, as a script file (the CSP allows no
// inline script), loaded by the pages that use it. Every page works without it.
//
// An upload made through htmx from inside an element with data-progress="ID" shows its
// progress in <progress id="ID"> (and in words in the element data-progress-text names, with
// data-progress-failed's words if it never gets through), and its answer is shown whatever its
// status: pages answer failures with a page saying why.
(function () {
  'use strict';
  function holder(e) {
    var t = e.detail && e.detail.elt;
    return t && t.closest ? t.closest('[data-progress]') : null;
  }
  document.addEventListener('htmx:beforeRequest', function (e) {
    var h = holder(e);
    if (!h) return;
    var bar = document.getElementById(h.dataset.progress);
    if (bar) { bar.value = 0; bar.hidden = false; }
    say(h, 'Uploading…');
  });
  document.addEventListener('htmx:xhr:progress', function (e) {
    var h = holder(e);
    if (!h || !e.detail.lengthComputable || !e.detail.total) return;
    var bar = document.getElementById(h.dataset.progress);
    var pct = Math.floor(100 * e.detail.loaded / e.detail.total);
    if (bar) bar.value = pct;
    if (pct >= 100) {
      if (bar) bar.removeAttribute('value'); // indeterminate while the server finishes
      say(h, 'Uploaded. Finishing the import…');
    } else {
      say(h, 'Uploading… ' + (pct - pct % 10) + '%'); // in steps: the text is read out
    }
  });
  document.addEventListener('htmx:beforeSwap', function (e) {
    if (holder(e) && e.detail.xhr.status >= 400) {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    }
  });
  document.addEventListener('htmx:sendError', function (e) {
    var h = holder(e);
    if (!h) return;
    var bar = document.getElementById(h.dataset.progress);
    if (bar) bar.hidden = true;
    say(h, h.dataset.progressFailed || 'The upload did not get through. Try again.');
  });
  function say(h, text) {
    var el = h.dataset.progressText && document.getElementById(h.dataset.progressText);
    if (el && el.textContent !== text) el.textContent = text;
  }
})();
