// Tuma dashboard, Send page: the counter's "Use plain characters" button puts the suggested
// text in the message field at once (and the counter follows), instead of the round trip the
// button makes without script. The CSP allows no inline script, so this is a file.
(function () {
  'use strict';
  document.addEventListener('click', function (e) {
    var b = e.target && e.target.closest ? e.target.closest('button[data-use-text]') : null;
    if (!b) return;
    var field = document.getElementById(b.dataset.useText);
    if (!field) return;
    e.preventDefault();
    // Focus first: htmx takes the last button clicked, while it has focus, as the submitter
    // of the counter's request (and its formaction as the address).
    field.focus();
    field.value = b.value;
    field.dispatchEvent(new Event('input', {bubbles: true}));
  });
})();
