package plist

import "html/template"

// The flame graph's script (the page's "flamescript" template, inside
// its script element): the graph is drawn by plist, each box an SVG
// group with its name and figures in its title, and the script makes
// it explore, reading the boxes back from the SVG (a box's level from
// its height, its callers the boxes below it that span it):
//
//   - a click on a box zooms on it: it spans the graph, the boxes above
//     it (its callees) in proportion, those below it (its callers) full
//     width and faded, the others hidden; a click on the bottom box,
//     "all", or on Reset, shows the whole graph again;
//   - the search box marks the boxes whose names hold its text, and
//     says their share of the time: the union of their spans, a box
//     inside another marked one counted once;
//   - Callers flips the graph to an icicle of the zoomed function's
//     callers: the function on top, full width, each caller of its
//     outermost boxes below it as wide as the time through it, down to
//     the stacks' outermost;
//   - the bar's link goes to the zoomed function's callers and callees;
//   - the page's filter (focus) shows the boxes on the stacks of the
//     functions it matches (theirs, their callees' above them, their
//     callers' below), or (hide) leaves out theirs and their callees'.
//
// With scripts off the bar stays hidden and a box's link goes to the
// function's view.
var _ = template.Must(htmlTemplate.New("flamescript").Parse(`
(function () {
  "use strict";
  var svg = document.querySelector("svg.flame"), bar = document.getElementById("flamebar");
  if (!svg || !bar) {
    return;
  }
  var NS = svg.namespaceURI, W = svg.viewBox.baseVal.width, M = 4, ROW = 18, CH = 7.2, EPS = 0.02;
  var search = document.getElementById("flame-search"), matched = document.getElementById("flame-matched");
  var reset = document.getElementById("flame-reset"), view = document.getElementById("flame-view");
  var flip = document.getElementById("flame-callers"), zoomed = document.getElementById("flame-zoomed");
  var frames = [], bottom = 0, selected = null, icicle = null;
  Array.prototype.forEach.call(svg.querySelectorAll("g"), function (g) {
    var rect = g.querySelector("rect"), a = g.parentNode.nodeName.toLowerCase() === "a" ? g.parentNode : null;
    var f = {g: g, link: a, rect: rect, name: g.querySelector("title").textContent.split("\n")[0],
      x: Number(rect.getAttribute("x")), span: Number(rect.getAttribute("width")) + 0.5, y: Number(rect.getAttribute("y")),
      text: g.querySelector("text")};
    bottom = Math.max(bottom, f.y);
    frames.push(f);
  });
  frames.forEach(function (f) {
    f.level = Math.round((bottom - f.y) / ROW);
  });
  function num(v) {
    return String(Math.round(v * 100) / 100);
  }
  function label(name, w) {
    var fit = Math.floor((w - 6) / CH);
    if (fit < 3) {
      return "";
    }
    return name.length <= fit ? name : name.slice(0, fit - 2) + "..";
  }
  function text(parent, x, y, s) {
    var t = parent.querySelector("text");
    if (!t) {
      t = parent.appendChild(document.createElementNS(NS, "text"));
    }
    t.setAttribute("x", num(x + 3));
    t.setAttribute("y", num(y + ROW - 6));
    t.textContent = s;
  }
  function place(f, x, w) {
    f.rect.setAttribute("x", num(x));
    f.rect.setAttribute("width", num(Math.max(w - 0.5, 0)));
    text(f.g, x, f.y, label(f.name, w));
  }
  function within(f, x0, span0) {
    return f.x >= x0 - EPS && f.x + f.span <= x0 + span0 + EPS;
  }
  function spans(f, x0, span0) {
    return f.x <= x0 + EPS && f.x + f.span >= x0 + span0 - EPS;
  }
  function zoom(z) {
    var x0 = z ? z.x : M, span0 = z ? z.span : W - 2 * M, level = z ? z.level : 0, scale = (W - 2 * M) / span0;
    frames.forEach(function (f) {
      var shown = true, above = false;
      if (f.level >= level && within(f, x0, span0)) {
        place(f, M + (f.x - x0) * scale, f.span * scale);
      } else if (f.level < level && spans(f, x0, span0)) {
        place(f, M, W - 2 * M);
        above = true;
      } else {
        shown = false;
      }
      f.g.style.display = shown && !f.out ? "" : "none";
      f.g.classList.toggle("caller", above);
    });
    selected = z;
    reset.hidden = flip.hidden = !z;
    view.hidden = !(z && z.link);
    if (z && z.link) {
      view.setAttribute("href", z.link.getAttribute("href"));
    }
    zoomed.textContent = z ? z.name : "";
  }
  function showIcicle(name) {
    var tops = frames.filter(function (f) {
      return f.name === name && !frames.some(function (g) { return g.level < f.level && g.name === name && spans(g, f.x, f.span); });
    });
    var tree = {name: name, value: 0, kids: {}}, depth = 1;
    tops.forEach(function (t) {
      var chain = frames.filter(function (g) { return g.level > 0 && g.level < t.level && spans(g, t.x, t.span); });
      chain.sort(function (a, b) { return b.level - a.level; });
      tree.value += t.span;
      var n = tree;
      chain.forEach(function (g) {
        n = n.kids[g.name] || (n.kids[g.name] = {name: g.name, value: 0, kids: {}});
        n.value += t.span;
      });
      depth = Math.max(depth, chain.length + 1);
    });
    icicle = svg.appendChild(document.createElementNS(NS, "g"));
    icicle.setAttribute("id", "icicle");
    var scale = (W - 2 * M) / tree.value;
    (function draw(n, x, level) {
      var w = n.value * scale, g = icicle.appendChild(document.createElementNS(NS, "g")), y = M + level * ROW;
      var title = g.appendChild(document.createElementNS(NS, "title")), r = g.appendChild(document.createElementNS(NS, "rect"));
      title.textContent = n.name + "\n" + (100 * n.value / tree.value).toFixed(1) + "% of " + name + "'s time";
      r.setAttribute("x", num(x));
      r.setAttribute("y", num(y + 0.5));
      r.setAttribute("width", num(Math.max(w - 0.5, 0)));
      r.setAttribute("height", "17");
      r.setAttribute("rx", "2");
      r.setAttribute("fill", level ? "#9ec5e8" : "#5b9bd5");
      g.setAttribute("data-name", n.name);
      text(g, x, y + 0.5, label(n.name, w));
      Object.keys(n.kids).sort().forEach(function (k) {
        draw(n.kids[k], x, level + 1);
        x += n.kids[k].value * scale;
      });
    })(tree, M, 0);
    frames.forEach(function (f) { f.g.style.display = "none"; });
    flip.textContent = "Flame graph";
  }
  function hideIcicle() {
    if (icicle) {
      icicle.remove();
      icicle = null;
      flip.textContent = "Callers";
      zoom(selected);
    }
  }
  document.addEventListener("sprof-filter", function (e) {
    var test = e.detail.test, focus = e.detail.mode === "focus", hits = frames.filter(function (m) {
      return test && m.level > 0 && test(m.name);
    });
    frames.forEach(function (f) {
      // (A box is on a matching function's stacks where it is one, is
      // above one, its callee, or below one, its caller.)
      var above = hits.some(function (m) { return m.level <= f.level && within(f, m.x, m.span); });
      var below = hits.some(function (m) { return m.level > f.level && spans(f, m.x, m.span); });
      f.out = test !== null && (focus ? !(above || below) : above);
    });
    if (!icicle) {
      zoom(selected);
    }
  });
  svg.addEventListener("click", function (e) {
    var g = e.target.closest && e.target.closest("g");
    if (!g || icicle) {
      return;
    }
    e.preventDefault();
    var f = frames.filter(function (f) { return f.g === g; })[0];
    if (f) {
      zoom(f.level === 0 ? null : f);
    }
  });
  reset.addEventListener("click", function () {
    hideIcicle();
    zoom(null);
  });
  flip.addEventListener("click", function () {
    if (icicle) {
      hideIcicle();
    } else if (selected) {
      showIcicle(selected.name);
    }
  });
  search.addEventListener("input", function () {
    var q = search.value.toLowerCase(), iv = [];
    frames.forEach(function (f) {
      var m = q !== "" && f.level > 0 && f.name.toLowerCase().indexOf(q) >= 0;
      f.g.classList.toggle("match", m);
      if (m) {
        iv.push([f.x, f.x + f.span]);
      }
    });
    iv.sort(function (a, b) { return a[0] - b[0]; });
    var total = 0, end = -1;
    iv.forEach(function (i) {
      if (i[1] > end) {
        total += i[1] - Math.max(i[0], end);
        end = i[1];
      }
    });
    matched.textContent = q === "" ? "" : iv.length + (iv.length === 1 ? " box matches: " : " boxes match: ") +
      (100 * total / (W - 2 * M)).toFixed(1) + "% of the time";
  });
  bar.hidden = false;
})();
`))
