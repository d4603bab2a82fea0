// The entry page's task explorer: search, filter and sort the tasks of the embedded
// document (#explorer-data). No request, no framework: works from file://. The state
// lives in the URL's fragment, so a view can be linked and reloaded.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("explorer-data").textContent);
  var table = document.getElementById("explorer");
  var search = document.getElementById("search");
  var select = document.getElementById("filter");
  var shown = document.getElementById("shown");
  var LIMIT = 500;
  // Worst first when sorting a cell column ascending.
  var ORDER = {"does-not-verify": 0, "failure": 1, "score": 2, "absent": 3, "success": 4, "not-assigned": 5};
  var keys = [["id", "task"], ["input", "input"]];
  data.columns.forEach(function (c, i) { keys.push(["c" + i, "seed " + c.seed + " · " + c.candidate]); });
  data.objectives.forEach(function (o, i) { keys.push(["o" + i, o.title + " (+ baseline)"]); });
  Object.keys(data.filters).forEach(function (name) {
    var option = document.createElement("option");
    option.value = name;
    option.textContent = data.filters[name];
    select.appendChild(option);
  });
  function state() {
    var p = new URLSearchParams(location.hash.slice(1));
    return {q: p.get("q") || "", filter: p.get("filter") || "all", sort: p.get("sort") || "", desc: p.get("desc") === "1"};
  }
  function save(s) {
    var p = new URLSearchParams();
    if (s.q) p.set("q", s.q);
    if (s.filter !== "all") p.set("filter", s.filter);
    if (s.sort) p.set("sort", s.sort);
    if (s.desc) p.set("desc", "1");
    history.replaceState(null, "", "#" + p.toString());
    render();
  }
  function value(row, key) {
    if (key === "id") return row.id;
    if (key === "input") return row.input;
    var i = Number(key.slice(1));
    if (key[0] === "c") return ORDER[row.cells[i][0]] * 1000 + (row.cells[i][1] ? 0 : 1);
    return row.contrib[i];
  }
  function compare(a, b, key) {
    var x = value(a, key), y = value(b, key);
    if (x === null || x === undefined) return (y === null || y === undefined) ? 0 : 1;
    if (y === null || y === undefined) return -1;
    if (typeof x === "number") return x - y;
    return x < y ? -1 : x > y ? 1 : 0;
  }
  function head(s) {
    var tr = document.createElement("tr");
    keys.forEach(function (k) {
      var th = document.createElement("th");
      var button = document.createElement("button");
      button.type = "button";
      button.dataset.sort = k[0];
      button.textContent = k[1] + (s.sort === k[0] ? (s.desc ? " ▼" : " ▲") : "");
      button.addEventListener("click", function () {
        var now = state();
        save({q: now.q, filter: now.filter, sort: k[0], desc: now.sort === k[0] ? !now.desc : false});
      });
      th.appendChild(button);
      if (s.sort === k[0]) th.setAttribute("aria-sort", s.desc ? "descending" : "ascending");
      tr.appendChild(th);
    });
    table.tHead.replaceChildren(tr);
  }
  function render() {
    var s = state();
    search.value = s.q;
    select.value = data.filters[s.filter] ? s.filter : "all";
    var q = s.q.toLowerCase();
    var rows = data.rows.filter(function (row) {
      if (row.filters.indexOf(select.value) < 0) return false;
      return !q || row.id.toLowerCase().indexOf(q) >= 0 || row.input.toLowerCase().indexOf(q) >= 0;
    });
    if (s.sort) {
      rows = rows.map(function (row, i) { return [row, i]; });
      rows.sort(function (a, b) { return (s.desc ? -1 : 1) * compare(a[0], b[0], s.sort) || a[1] - b[1]; });
      rows = rows.map(function (pair) { return pair[0]; });
    }
    head(s);
    var body = document.createDocumentFragment();
    rows.slice(0, LIMIT).forEach(function (row) {
      var tr = document.createElement("tr");
      tr.dataset.task = row.id;
      var td = document.createElement("td");
      var link = document.createElement("a");
      link.href = "tasks/" + row.id + ".html";
      link.textContent = row.id;
      td.appendChild(link);
      tr.appendChild(td);
      td = document.createElement("td");
      td.className = "input small";
      td.textContent = row.input;
      tr.appendChild(td);
      row.cells.forEach(function (cell) {
        var c = document.createElement("td");
        c.className = "cell " + cell[0];
        c.dataset.state = cell[0];
        c.textContent = cell[1];
        tr.appendChild(c);
      });
      row.contrib.forEach(function (x) {
        var c = document.createElement("td");
        c.className = "num";
        c.textContent = x === null ? "" : (x > 0 ? "+" : "") + Number(x.toPrecision(3));
        tr.appendChild(c);
      });
      body.appendChild(tr);
    });
    table.tBodies[0].replaceChildren(body);
    shown.textContent = rows.length > LIMIT
      ? "showing the first " + LIMIT + " of " + rows.length + " tasks: search or filter to narrow them"
      : rows.length + " of " + data.rows.length + " tasks";
    shown.dataset.count = String(rows.length);
  }
  search.addEventListener("input", function () { var s = state(); s.q = search.value; save(s); });
  select.addEventListener("change", function () { var s = state(); s.filter = select.value; save(s); });
  window.addEventListener("hashchange", render);
  render();
})();
