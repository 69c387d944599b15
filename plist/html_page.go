package plist

import (
	"html/template"
)

// The HTML report's page (FormatHTML): the template, with its inline CSS and
// script.

// htmlTemplate is the page. Its Content-Security-Policy lets it run its
// own inline style and script and fetch nothing.
var htmlTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>{{or .Heading .Program}}: {{.Profile}}</title>
<style>
:root{--fg:#1f2430;--muted:#5d6677;--rule:#dde2ea;--panel:#f4f6fa;--run:#e3f3e6;--never:#fbe3e4;--hot:#ffdcaa;--hotfg:#9a3c00;--link:#1f5fbf}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1260px;padding:20px 28px 40px;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",sans-serif;color:var(--fg);background:#fff}
a{color:var(--link)}
h1{font-size:26px;margin:0}
h2{font-size:19px;margin:30px 0 10px;padding-bottom:4px;border-bottom:2px solid var(--rule)}
h3{font-size:15px;margin:0 0 6px}
.about{margin:2px 0 6px;color:var(--muted)}
nav a{margin-right:14px}
.note,.legend{color:var(--muted);margin:6px 0 10px}
.stats{display:flex;flex-wrap:wrap;gap:14px}
.block{flex:1 1 360px;background:var(--panel);border:1px solid var(--rule);border-radius:8px;padding:10px 16px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:0}
dt{color:var(--muted)}
dd{margin:0;font-variant-numeric:tabular-nums;overflow-wrap:anywhere}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
#table{width:100%}
#table th,#table td{padding:4px 10px;border-bottom:1px solid var(--rule);text-align:left}
#table th{position:sticky;top:0;background:var(--panel);white-space:nowrap}
#table th button{all:unset;cursor:pointer;font-weight:600}
#table th button:focus-visible{outline:2px solid var(--link)}
#table th[aria-sort=ascending] button::after{content:" \25B2";font-size:11px}
#table th[aria-sort=descending] button::after{content:" \25BC";font-size:11px}
#table .n{text-align:right;white-space:nowrap}
#files td{overflow-wrap:anywhere}
#files table{width:100%}
#files th,#files td{padding:3px 10px;border-bottom:1px solid var(--rule);text-align:left}
#files th{background:var(--panel)}
#files .n{text-align:right;white-space:nowrap}
#files tr.dir td{font-weight:600;background:#f8f9fb}
#files tr.f td:first-child{padding-left:30px}
#callview h3{font-size:17px;margin:6px 0}
.callviews{display:flex;flex-wrap:wrap;gap:18px}
.calls{flex:1 1 420px;border:1px solid var(--rule)}
.calls th,.calls td{padding:2px 8px;border-bottom:1px solid var(--rule);text-align:left;overflow-wrap:anywhere}
.calls th{background:var(--panel)}
.calls .n{text-align:right;white-space:nowrap}
#table tbody tr:hover td{background:#eef3fb}
#table tr.never td{color:#8a92a0}
#lines #table tr.never td{background:var(--never);color:inherit}
#table tr.hot td{background:var(--hot)}
.flame{display:block;width:100%;height:auto;border:1px solid var(--rule);border-radius:6px;background:#fbfbfc}
.flame text{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;fill:#1a1a1a;pointer-events:none}
.flame g:hover rect{stroke:#222;stroke-width:1}
.flame g{cursor:pointer}
.flame g.match rect{fill:#d24fc4}
.flame g.caller{opacity:.55}
.flamebar{display:flex;flex-wrap:wrap;gap:12px;align-items:center;margin:6px 0}
.flamebar input{font:inherit;padding:3px 8px;min-width:240px}
#flame-zoomed{font-weight:600}
.filterbar{display:flex;flex-wrap:wrap;gap:12px;align-items:center;margin:8px 0 0}
.filterbar input[type=search]{font:inherit;padding:3px 8px;min-width:300px}
.legend span{display:inline-block;padding:1px 8px;margin-right:8px;border-radius:4px;color:var(--fg)}
.run{background:var(--run)}.never{background:var(--never)}.hot{background:var(--hot)}
.file{margin:18px 0 26px}
.missing{background:var(--never);border-radius:6px;padding:8px 12px}
.src{width:100%;font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;border:1px solid var(--rule)}
.src th{background:var(--panel);font-weight:600;text-align:right;padding:2px 8px}
.src th:last-child{text-align:left}
.src td{padding:0 8px;vertical-align:top}
.src td.ln{color:#9aa1ad;text-align:right;user-select:none}
.src td.c,.src td.p{text-align:right;white-space:nowrap}
.src td.code{white-space:pre-wrap;tab-size:4;width:100%}
.src tr.run td.c,.src tr.run td.p{background:var(--run)}
.src tr.never td{background:var(--never)}
.src tr.hot td{background:var(--hot)}
.src tr.hot td.c{color:var(--hotfg);font-weight:700}
.src tr:target td{outline:2px solid var(--link)}
{{if .Branches}}.src th.br{text-align:left}
.src td.br{white-space:nowrap;font-weight:700}
.br .taken{color:#1a7f37}.br .not{color:#b42318}.br .unrun{color:#8a92a0}
.partial,.src tr.partial td.br,.src tr.partial td.code{background:#fff1c2}
{{end}}{{if .Profiles}}.profiles{margin:0 0 8px;padding-left:22px;color:var(--muted)}
.profiles .path{color:var(--fg);overflow-wrap:anywhere}
{{end}}footer{margin-top:36px;color:var(--muted);font-size:13px}
</style>
</head>
<body>
<header>
<h1>{{or .Heading .Program}}</h1>
<p class="about">{{.About}}</p>
{{with .Profiles}}<ul class="profiles">{{range .}}<li><span class="path">{{.Key}}</span>: {{.Value}}</li>{{end}}</ul>
{{end}}<nav><a href="#statistics">Statistics</a>{{if or .Flame .FlameNote}}<a href="#flame">Flame graph</a>{{end}}{{if .CallData}}<a href="#calls">Callers and callees</a>{{end}}{{if .Files}}<a href="#files">Files</a>{{end}}<a href="#{{.TableID}}">{{.TableTitle}}</a>{{if .Sources}}<a href="#source">Annotated source</a>{{end}}</nav>
{{if eq .TableID "functions"}}<div class="filterbar" id="filterbar" hidden><input type="search" id="filter" placeholder="Filter functions: a regular expression" aria-label="Filter the functions"><label><input type="radio" name="filter-mode" value="focus" checked> focus on them</label><label><input type="radio" name="filter-mode" value="hide"> hide them</label><span id="filter-count" class="note"></span></div>
{{end}}</header>
<section id="statistics">
<h2>Statistics</h2>
<div class="stats">
{{range .Stats}}<div class="block"><h3>{{.Title}}</h3><dl>
{{range .Items}}<dt>{{.Key}}</dt><dd>{{.Value}}</dd>
{{end}}</dl></div>
{{end}}</div>
</section>
{{if or .Flame .FlameNote}}<section id="flame">
<h2>Flame graph</h2>
{{with .Flame}}<p class="note">Each box is a function, called by the box below it, as wide as its share of the time of the call stacks through it ({{.Total}} in all, its own time and its callees'). The stacks are as deep as the profile recorded them: the bottom box of a stack is its outermost recorded caller. Point at a box for its figures; click it to zoom on it (all, the bottom box, zooms out), then Callers for the tree of its callers. The search marks the functions whose names hold its text, with their share of the time.</p>
<div class="flamebar" id="flamebar" hidden><input type="search" id="flame-search" placeholder="Search functions" aria-label="Search the flame graph's functions"><span id="flame-matched" class="note"></span><span id="flame-zoomed"></span><button type="button" id="flame-callers" hidden>Callers</button><a id="flame-view" href="#calls" hidden>Callers and callees</a><button type="button" id="flame-reset" hidden>Reset zoom</button></div>
<svg class="flame" viewBox="0 0 {{.Width}} {{.Height}}" width="{{.Width}}" height="{{.Height}}" role="img" aria-label="flame graph">
{{range .Frames}}{{if .Href}}<a href="{{.Href}}">{{end}}<g><title>{{.Title}}</title><rect x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="17" rx="2" fill="{{.Fill}}"/>{{if .Label}}<text x="{{.TX}}" y="{{.TY}}">{{.Label}}</text>{{end}}</g>{{if .Href}}</a>{{end}}
{{end}}</svg>
{{if .Hidden}}<p class="note">{{.Hidden}} frames too narrow to draw are left out.</p>{{end}}
{{else}}<p class="note">{{$.FlameNote}}</p>
{{end}}</section>
{{end}}{{if .CallData}}<section id="calls">
<h2>Callers and callees</h2>
<p class="note">Click a function's name in the table, or its box in the flame graph: its callers and the functions it called come here, with the calls between them, their time with children and their shares. Click one of them for its own; the browser's Back comes back. (The view is drawn by the page's script.)</p>
<div id="callview" hidden></div>
<script type="application/json" id="calls-data">{{.CallData}}</script>
</section>
{{end}}{{if .Files}}<section id="files">
<h2>Files</h2>
<p class="note">Each directory's lines, then each of its files': the lines profiled, those that {{if .Coverage}}were covered{{else}}ran{{end}} and their share{{if not .Coverage}}, and their hits and share of all the hits{{end}}{{if .Branches}}; then the ways of their branches (two a branch: to its target, and on), those taken and their share{{end}}.</p>
<table>
<thead><tr><th>Directory and file</th><th class="n">Lines</th><th class="n">{{if .Coverage}}Covered{{else}}Run{{end}}</th><th class="n">%</th>{{if not .Coverage}}<th class="n">Hits</th><th class="n">%</th>{{end}}{{if .Branches}}<th class="n" title="branch ways: two a branch">Branches</th><th class="n">Taken</th><th class="n">%</th>{{end}}</tr></thead>
<tbody>
{{range .Files}}<tr class="{{if .Dir}}dir{{else}}f{{end}}"><td title="{{.Title}}">{{if .Href}}<a href="{{.Href}}">{{.Name}}</a>{{else}}{{.Name}}{{end}}</td><td class="n">{{.Lines}}</td><td class="n">{{.Run}}</td><td class="n">{{.Cover}}</td>{{if not $.Coverage}}<td class="n">{{.Hits}}</td><td class="n">{{.HitsShare}}</td>{{end}}{{if $.Branches}}<td class="n">{{.Ways}}</td><td class="n">{{.Taken}}</td><td class="n">{{.WaysCover}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
</section>
{{end}}<section id="{{.TableID}}">
<h2>{{.TableTitle}}</h2>
<p class="note">Click a heading to sort by its column, again to reverse the order. The page's address keeps the order, to share it (#sort=hits-desc).</p>
{{if .Omitted}}<p class="note">{{.Omitted}}</p>
{{end}}<table id="table">
<thead><tr>{{range .Columns}}<th data-key="{{.Key}}"{{if .Num}} data-type="num" class="n"{{end}}{{if .Sort}} aria-sort="{{.Sort}}"{{end}}{{if .Title}} title="{{.Title}}"{{end}}><button type="button">{{.Label}}</button></th>{{end}}</tr></thead>
<tbody>
{{.RowsHTML}}</tbody>
</table>
</section>
{{if .Sources}}<section id="source">
<h2>Annotated source</h2>
<p class="legend">{{if .Coverage}}<span class="run">&#x2713; executed</span><span class="never">&#x2717; never executed</span>{{else}}<span class="hot">hot: one of the {{.HotLines}} lines with the most {{.Unit}}, or tied with them</span>{{if eq .Unit "hits"}}<span class="run">executed</span><span class="never">never executed</span>{{else}}<span class="run">sampled</span>{{end}}{{end}} {{if eq .Unit "samples"}}A line without a mark had no sample.{{else}}A line without a mark has no code of its own.{{end}}</p>
{{if .Branches}}<p class="legend"><span class="partial">branches not all taken</span> Branches: a [ + - ] for each conditional branch of the line, its way to its target, then on to the next instruction: + taken, - never taken, # not run (the line never ran). Point at a mark for its runs.</p>
{{end}}{{range .Sources}}<div class="file" id="{{.ID}}">
<h3>{{.Name}}{{if ne .Module $.Program}} ({{.Module}}){{end}}</h3>
{{if .Found}}<p class="note">Source file: {{.Found}}</p>
<table class="src">
<thead><tr><th>Line</th><th>{{if $.Coverage}}Covered{{else}}{{$.UnitHead}}{{end}}</th><th>{{if not $.Coverage}}%{{end}}</th>{{if $.Branches}}<th class="br">Branches</th>{{end}}<th>Source</th></tr></thead>
<tbody>
{{.LinesHTML}}</tbody>
</table>
{{else}}<p class="missing">Source file not found: {{.Name}}. plist looked where prep recorded it, in the compilation directories and in the /D directories: give its directory with plist /D DIR.</p>
{{end}}</div>
{{end}}</section>
{{end}}<footer>{{.Footer}}. This page is self-contained: nothing in it is fetched from the network.</footer>
<script>
(function () {
  "use strict";
  var table = document.getElementById("table");
  if (!table) {
    return;
  }
  var heads = table.tHead.rows[0].cells, body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows), keys = [], order = [], i;
  for (i = 0; i < rows.length; i++) {
    order.push(i);
  }
  function key(c) {
    if (!keys[c]) {
      var num = heads[c].getAttribute("data-type") === "num", k = new Array(rows.length);
      for (var r = 0; r < rows.length; r++) {
        var td = rows[r].cells[c];
        k[r] = num ? Number(td.getAttribute("data-v")) : td.textContent;
      }
      keys[c] = k;
    }
    return keys[c];
  }
  function sort(c, desc) {
    var k = key(c), pos = new Array(rows.length), f = document.createDocumentFragment();
    order.forEach(function (r, p) { pos[r] = p; });
    order.sort(function (a, b) {
      var x = k[a], y = k[b];
      if (x < y) {
        return desc ? 1 : -1;
      }
      if (x > y) {
        return desc ? -1 : 1;
      }
      return pos[a] - pos[b];
    });
    order.forEach(function (r) { f.appendChild(rows[r]); });
    body.appendChild(f);
    for (var j = 0; j < heads.length; j++) {
      heads[j].removeAttribute("aria-sort");
    }
    heads[c].setAttribute("aria-sort", desc ? "descending" : "ascending");
  }
  function column(name) {
    for (var j = 0; j < heads.length; j++) {
      if (heads[j].getAttribute("data-key") === name) {
        return j;
      }
    }
    return -1;
  }
  function fromAddress() {
    var parts = location.hash.slice(1).split("&");
    for (var p = 0; p < parts.length; p++) {
      if (parts[p].indexOf("sort=") === 0) {
        var v = parts[p].slice(5), d = v.lastIndexOf("-"), c = column(v.slice(0, d)), dir = v.slice(d + 1);
        if (c >= 0 && (dir === "asc" || dir === "desc")) {
          sort(c, dir === "desc");
        }
      }
    }
  }
  Array.prototype.forEach.call(heads, function (th, c) {
    th.querySelector("button").addEventListener("click", function () {
      var now = th.getAttribute("aria-sort");
      var desc = now ? now === "ascending" : th.getAttribute("data-type") === "num";
      sort(c, desc);
      try {
        history.replaceState(null, "", "#sort=" + th.getAttribute("data-key") + "-" + (desc ? "desc" : "asc"));
      } catch (e) {
      }
    });
  });
  window.addEventListener("hashchange", fromAddress);
  fromAddress();
  var nameCol = column("name"), count = document.getElementById("filter-count");
  document.addEventListener("sprof-filter", function (e) {
    var test = e.detail.test, shown = 0;
    rows.forEach(function (tr) {
      var keep = !test || (e.detail.mode === "focus") === test(tr.cells[nameCol].textContent);
      tr.hidden = !keep;
      shown += keep ? 1 : 0;
    });
    if (count) {
      count.textContent = test ? shown + " of " + rows.length + " functions listed" : "";
    }
  });
})();
(function () {
  "use strict";
  var data = document.getElementById("calls-data"), view = document.getElementById("callview");
  if (!data || !view) {
    return;
  }
  data = JSON.parse(data.textContent);
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined) {
      e.textContent = text;
    }
    if (cls) {
      e.className = cls;
    }
    return e;
  }
  function ms(ns) {
    return (ns / 1e6).toFixed(3);
  }
  var filter = {};
  document.addEventListener("sprof-filter", function (e) {
    filter = e.detail;
    show();
  });
  function table(title, rows, whole) {
    var t = el("table", undefined, "calls"), head = el("tr"), body = el("tbody");
    [title, "Calls"].concat(data.timed ? ["ms", "%"] : ["%"]).forEach(function (h, i) {
      head.appendChild(el("th", h, i ? "n" : ""));
    });
    t.appendChild(el("thead")).appendChild(head);
    rows = rows.filter(function (r) {
      return !(filter.test && filter.mode === "hide" && r.fn >= 0 && filter.test(data.names[r.fn]));
    });
    rows.forEach(function (r) {
      var tr = el("tr"), name = el("td");
      if (r.fn >= 0) {
        var a = el("a", data.names[r.fn]);
        a.href = "#fn-" + r.fn;
        name.appendChild(a);
      } else {
        name.textContent = "(no profiled caller)";
      }
      tr.appendChild(name);
      tr.appendChild(el("td", String(r.calls), "n"));
      if (data.timed) {
        tr.appendChild(el("td", ms(r.time), "n"));
      }
      var part = data.timed ? r.time : r.calls, all = data.timed ? whole.time : whole.calls;
      tr.appendChild(el("td", (all ? 100 * part / all : 0).toFixed(1), "n"));
      body.appendChild(tr);
    });
    if (!rows.length) {
      var none = el("td", "(none)");
      none.colSpan = 4;
      body.appendChild(el("tr")).appendChild(none);
    }
    t.appendChild(body);
    return t;
  }
  function byCost(a, b) {
    return (b.time - a.time) || (b.calls - a.calls) || (a.fn - b.fn);
  }
  function show() {
    var m = /^#fn-(\d+)$/.exec(location.hash);
    if (!m || !(m[1] in data.names)) {
      return;
    }
    var f = Number(m[1]), callers = [], callees = [], whole = {calls: 0, time: 0};
    data.edges.forEach(function (e) {
      if (e[1] === f) {
        callers.push({fn: e[0], calls: e[2], time: e[3]});
        whole.calls += e[2];
        whole.time += e[3];
      }
      if (e[0] === f) {
        callees.push({fn: e[1], calls: e[2], time: e[3]});
      }
    });
    callers.sort(byCost);
    callees.sort(byCost);
    view.textContent = "";
    view.appendChild(el("h3", data.names[f]));
    view.appendChild(el("p", whole.calls + " calls in the stacks" + (data.timed ? ", " + ms(whole.time) + " ms with children" : ""), "note"));
    var both = view.appendChild(el("div", undefined, "callviews"));
    both.appendChild(table("Called by", callers, whole)).classList.add("callers");
    both.appendChild(table("Calls to", callees, whole)).classList.add("callees");
    view.hidden = false;
    view.scrollIntoView();
  }
  window.addEventListener("hashchange", show);
  show();
})();
{{if .Flame}}{{template "flamescript"}}{{end}}
(function () {
  "use strict";
  var bar = document.getElementById("filterbar"), box = document.getElementById("filter");
  if (!bar || !box) {
    return;
  }
  function apply() {
    var text = box.value, test = null, mode = bar.querySelector("input[name=filter-mode]:checked").value;
    if (text !== "") {
      try {
        var re = new RegExp(text);
        test = function (name) { return re.test(name); };
        box.removeAttribute("aria-invalid");
      } catch (err) {
        test = function (name) { return name.indexOf(text) >= 0; }; // (not a regular expression: its text)
        box.setAttribute("aria-invalid", "true");
      }
    }
    document.dispatchEvent(new CustomEvent("sprof-filter", {detail: {test: test, mode: mode}}));
  }
  box.addEventListener("input", apply);
  Array.prototype.forEach.call(bar.querySelectorAll("input[name=filter-mode]"), function (r) {
    r.addEventListener("change", apply);
  });
  bar.hidden = false;
})();
</script>
</body>
</html>
`))
