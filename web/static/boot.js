// boot.js: a classic script that explains a dashboard that failed to start
// (an old browser without ES modules, or an asset that did not load) instead
// of leaving "Loading…" on screen forever. app.js sets __mcpscopeStarted.
(function () {
  'use strict';
  var failed = false;
  function explain() {
    if (window.__mcpscopeStarted) return;
    var app = document.getElementById('app');
    if (!app) return;
    app.innerHTML = '';
    var p = document.createElement('p');
    p.className = 'boot boot-failed';
    p.setAttribute('role', 'alert');
    p.setAttribute('data-testid', 'boot-failed');
    p.textContent = 'The dashboard could not start. Reload the page; if this persists, use a current browser (it needs JavaScript modules).';
    app.appendChild(p);
  }
  // A module script that fails to load reports here (uPlot failing is not
  // fatal: charts fall back to tables).
  window.addEventListener('error', function (e) {
    var t = e.target;
    if (t && t.tagName === 'SCRIPT' && t.type === 'module' && !failed) { failed = true; explain(); }
  }, true);
  window.addEventListener('load', function () { setTimeout(explain, 3000); });
})();
