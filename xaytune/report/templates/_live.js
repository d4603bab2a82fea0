// The live viewer's panel (python -m xaytune.view <tree> --serve): polls the status
// every second, shows the running counts and the verdicts once they land, and reloads
// the page when a newer build of the site changed it (a page whose bytes are the same
// in the newer build stays, scroll and open details kept). Text only (textContent): names
// from a run are never markup. Talks to the server that served the page, nothing else.
(function () {
  "use strict";
  var panel = document.getElementById("xaytune-live");
  if (!panel) return;
  var shown = Number(panel.dataset.generation);
  var digest = panel.dataset.digest;
  var scrollKey = "xaytune-live-scroll:" + location.pathname;
  var kept = sessionStorage.getItem(scrollKey);
  if (kept !== null) {
    sessionStorage.removeItem(scrollKey);
    window.addEventListener("load", function () { window.scrollTo(0, Number(kept)); });
  }
  panel.style.cssText =
    "border:1px solid #888;background:#f6f6f0;padding:.4em .8em;margin:0 0 1em;" +
    "font:13px/1.4 system-ui,sans-serif;color:#222";

  function add(parent, tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined) node.textContent = text;
    if (cls) node.className = cls;
    parent.appendChild(node);
    return node;
  }

  function render(s) {
    panel.replaceChildren();
    add(panel, "strong", s.writer
      ? "live: a run (pid " + s.writer + ") is writing " + s.tree + "; this page follows it"
      : "live: " + s.tree + " is not being written (finished or stopped)");
    add(panel, "div",
      "sealed attempts: " + s.sealed + " (partial " + s.partial + ") · open: " + s.open,
      "live-total");
    if (s.replicates.length) {
      // Open while a run writes the tree; a finished tree's counts stay one click away.
      var box = add(panel, "details");
      box.open = Boolean(s.writer);
      add(box, "summary", "per candidate and seed");
      var table = add(box, "table", undefined, "live-counts");
      var head = add(add(table, "thead"), "tr");
      var models = s.replicates.some(function (r) { return r.model !== null; });
      (models ? ["model"] : []).concat(
        ["candidate", "seed", "sealed", "complete", "partial", "open"]
      ).forEach(function (name) { add(head, "th", name); });
      var body = add(table, "tbody");
      s.replicates.forEach(function (r) {
        var row = add(body, "tr");
        (models ? [r.model || ""] : []).concat(
          [r.candidate, r.seed, r.sealed, r.complete, r.partial, r.open]
        ).forEach(function (value) { add(row, "td", String(value)); });
      });
    }
    if (s.comparisons.length) {
      s.comparisons.forEach(function (c) {
        var verdicts = c.verdicts.map(function (v) { return v.metric + " " + v.verdict; });
        var line = add(panel, "div", c.where + ": " + c.a + " vs " + c.b + " · relation " +
          c.relation + " · " + verdicts.join(" · ") + " · ", "live-verdict");
        add(line, "a", "report page").href = "/reports/" + c.where + "/report.html";
      });
    } else {
      add(panel, "div", "verdicts: not yet (they appear when the run's comparison lands)",
        "live-verdict");
    }
    add(panel, "div", s.problem
      ? "site: " + (s.site ? "showing build " + s.generation + "; " : "") +
        "the newest build failed: " + s.problem
      : "site: build " + s.generation + " (" + (s.site || "none yet") + ")", "live-site");
  }

  function poll() {
    fetch("/_live/status.json", { cache: "no-store" })
      .then(function (reply) { return reply.json(); })
      .then(function (s) {
        render(s);
        if (s.generation > shown) {  // a newer build: reload if this page changed in it
          return fetch("/_live/digest" + location.pathname, { cache: "no-store" })
            .then(function (reply) { return reply.json(); })
            .then(function (d) {
              if (d.digest !== digest) {
                sessionStorage.setItem(scrollKey, String(window.scrollY));
                location.reload();
                return;
              }
              shown = d.generation;
              panel.dataset.shown = String(shown);  // this page is the newer build's too
              setTimeout(poll, 1000);
            });
        }
        setTimeout(poll, 1000);
      })
      .catch(function () {  // stopped, or busy for a moment: say so and ask again
        panel.replaceChildren();
        add(panel, "strong", "live: the viewer's server does not answer (stopped?); retrying");
        setTimeout(poll, 2000);
      });
  }
  poll();
})();
