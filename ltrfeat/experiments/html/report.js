// ltrfeat report.html: sortable/filterable tables and the per-query drill-down. No network, no libraries.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("report-data").textContent);

  // -- sortable tables: click a header; numbers sort by their data-v value ---------------------------
  function cellValue(row, i) {
    const cell = row.cells[i];
    const v = cell.getAttribute("data-v");
    if (v !== null && v !== "") return parseFloat(v);
    return cell.textContent.trim().toLowerCase();
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    const headers = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(headers, function (th, i) {
      th.addEventListener("click", function () {
        const ascending = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(headers, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        const body = table.tBodies[0];
        const rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          const x = cellValue(a, i), y = cellValue(b, i);
          const xn = typeof x === "number" && !isNaN(x), yn = typeof y === "number" && !isNaN(y);
          let c;
          if (xn && yn) c = x - y;
          else if (xn) c = -1;
          else if (yn) c = 1;
          else c = String(x).localeCompare(String(y));
          return ascending ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  document.querySelectorAll("input[data-filter]").forEach(function (input) {
    const table = document.getElementById(input.getAttribute("data-filter"));
    const toggle = document.querySelector("input[data-candidates='" + table.id + "']");
    function apply() {
      const words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
        const text = r.textContent.toLowerCase();
        const hidden = (toggle && !toggle.checked && r.getAttribute("data-kind") === "candidate") ||
          !words.every(function (w) { return text.indexOf(w) >= 0; });
        r.style.display = hidden ? "none" : "";
      });
    }
    input.addEventListener("input", apply);
    if (toggle) toggle.addEventListener("change", apply);
    apply();
  });

  // -- drill-down ------------------------------------------------------------------------------------
  const drill = data.drill;
  const box = document.getElementById("drill");
  if (!drill || !box) return;
  const search = document.getElementById("drill-search");
  const results = document.getElementById("drill-results");
  const baseSel = document.getElementById("drill-base");
  const variantSel = document.getElementById("drill-variant");
  const view = document.getElementById("drill-view");
  let current = null;

  drill.sets.forEach(function (name, i) {
    [baseSel, variantSel].forEach(function (sel) {
      const o = document.createElement("option");
      o.value = i; o.textContent = name; sel.appendChild(o);
    });
  });
  baseSel.value = drill.default_base; variantSel.value = drill.default_variant;

  // every value of the report reaches the page as text: elements are built, never parsed from strings
  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    (children || []).forEach(function (c) {
      if (c !== null && c !== undefined) node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  }
  function fmt(x, d) { return x === null || x === undefined ? "n/a" : Number(x).toFixed(d); }

  function listQueries() {
    const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    const b = +baseSel.value, v = +variantSel.value;
    results.textContent = "";
    let shown = 0;
    for (let i = 0; i < drill.queries.length && shown < 60; i++) {
      const q = drill.queries[i];
      const hay = (q[0] + " " + (q[1] || "")).toLowerCase();
      if (!words.every(function (w) { return hay.indexOf(w) >= 0; })) continue;
      const btn = document.createElement("button");
      const d = (q[2][v] === null || q[2][b] === null) ? null : q[2][v] - q[2][b];
      btn.textContent = q[0] + (q[1] ? " — " + q[1] : "") + "   (" + drill.metric + " " +
        (d === null ? "n/a" : (d >= 0 ? "+" : "") + d.toFixed(3)) + ")";
      btn.setAttribute("data-q", i);
      btn.setAttribute("data-qid", q[0]);
      btn.addEventListener("click", function () { show(i); });
      if (i === current) btn.className = "active";
      results.appendChild(btn);
      shown++;
    }
    if (!shown) results.textContent = "no query matches";
  }

  function distinct(neurons) {
    const seen = {};
    return neurons.map(function (n) { return n[1]; }).filter(function (w) {
      if (seen[w]) return false;
      seen[w] = true;
      return true;
    });
  }

  // the neural columns of set s for query q (the recommended set's depend on the query's fold)
  function neuralOf(q, s) {
    return drill.neural && q[3] !== null && q[3] !== undefined ? drill.neural[s][q[3]] || [] : [];
  }
  // the encoders with max-pool words whose columns set s holds for query q: only they explain its matches
  function explainers(q, s) {
    const cols = neuralOf(q, s);
    return Object.keys(drill.words || {}).filter(function (model) {
      return cols.some(function (c) { return c.indexOf(model + "_") === 0; });
    });
  }

  function wordsOf(kind, id, models) {
    const out = [];
    models.forEach(function (model) {
      const w = drill.words[model][kind][id];
      if (w) out.push([model, w]);
    });
    return out;
  }

  function side(q, docs, s, other, title) {
    const models = explainers(q, s);
    const ranked = docs.filter(function (d) { return d[2][s] <= drill.top; })
      .sort(function (a, b) { return a[2][s] - b[2][s]; });
    const body = el("tbody");
    ranked.forEach(function (d) {
      // places this set ranks the document above (▲ higher) or below (▼ lower) the other set: not better or worse
      const move = d[2][other] - d[2][s];
      let mv = "same";
      if (move > 0) mv = "▲ " + move + " higher";
      else if (move < 0) mv = "▼ " + (-move) + " lower";
      const text = drill.doc_text ? drill.doc_text[d[0]] : null;
      const doc = el("td", { class: "doc" }, [el("b", {}, [String(d[0])]), text ? " " + text : null]);
      const qWords = wordsOf("q", q[0], models);
      wordsOf("d", d[0], models).forEach(function (pair) {
        const qw = qWords.filter(function (x) { return x[0] === pair[0]; })[0];
        const qNeurons = {};
        if (qw) qw[1].forEach(function (n) { qNeurons[n[0]] = n[1]; });
        const shared = distinct(pair[1].filter(function (n) { return n[0] in qNeurons; })
          .map(function (n) { return [0, qNeurons[n[0]] + "↔" + n[1]]; }));
        doc.appendChild(el("div", { class: "words" }, [pair[0] + " max-pool words: " +
          distinct(pair[1]).slice(0, 5).join(", ") +
          (shared.length ? "; shared with the query: " + shared.slice(0, 4).join(", ") : "")]));
      });
      // the features that moved it: this set's largest contributions relative to the query's average document
      const why = d[4] ? d[4][s] : null;
      if (why && move !== 0) {
        doc.appendChild(el("div", { class: "why" }, ["moved by: " + why.map(function (p) {
          return (p[1] < 0 ? "−" : "+") + Math.abs(p[1]).toFixed(2) + " " + drill.features[p[0]];
        }).join(", ")]));
      }
      body.appendChild(el("tr", {}, [
        el("td", { "data-v": String(d[2][s]) }, [String(d[2][s])]), doc,
        el("td", { class: "rel" }, [String(d[1])]), el("td", {}, [fmt(d[3][s], 4)]), el("td", { class: "move" }, [mv]),
      ]));
    });
    const head = el("tr", {}, ["rank", "document", "label", "score", "vs the other set"].map(function (h) {
      return el("th", h === "document" ? { class: "text" } : {}, [h]);
    }));
    const neural = neuralOf(q, s);
    let why = null;
    if (models.length) {
      why = el("p", { class: "words" }, ["words: the CLSM max-pool words of " + models.join(", ") +
        " (the neurons that fire for a document, and those it shares with the query)"]);
    } else if (neural.length) {
      why = el("p", { class: "words" }, ["no word-level explanation for this set's neural features (" +
        neural.join(", ") + "): " + (drill.words ? "this page has max-pool words only for the CLSM encoders " +
        Object.keys(drill.words).join(", ") + ", and none of them computes these" :
        "this page has no encoder's max-pool words (CLSM encoders at hand give them, as in the demo)")]);
    }
    return el("div", {}, [
      el("h3", {}, [title + " ", el("code", {}, [String(drill.sets[s])]), " — " + drill.metric + " " + fmt(q[2][s], 4)]),
      why,
      el("table", {}, [el("thead", {}, [head]), body]),
    ]);
  }

  function show(i) {
    current = i;
    const q = drill.queries[i];
    const docs = drill.docs[i];
    const b = +baseSel.value, v = +variantSel.value;
    view.textContent = "";
    view.appendChild(el("p", {}, [el("b", {}, ["query " + q[0]]), (q[1] ? ": " + q[1] : "") + " — " + docs.length +
      " documents shown (top " + drill.top + " of either set; ▲ n higher / ▼ n lower = ranked n places higher or " +
      "lower than under the other set)"]));
    const qWords = wordsOf("q", q[0], explainers(q, b).concat(explainers(q, v).filter(function (m) {
      return explainers(q, b).indexOf(m) < 0;
    })));
    const lines = [];
    qWords.forEach(function (p, k) {
      if (k) lines.push(el("br"));
      lines.push(p[0] + " query max-pool words: " + distinct(p[1]).slice(0, 5).join(", "));
    });
    if (lines.length) view.appendChild(el("p", { class: "words" }, lines));
    view.appendChild(el("div", { class: "side" }, [side(q, docs, b, v, "baseline"), side(q, docs, v, b, "variant")]));
    listQueries();
  }

  search.addEventListener("input", listQueries);
  [baseSel, variantSel].forEach(function (sel) {
    sel.addEventListener("change", function () { if (current !== null) show(current); else listQueries(); });
  });
  listQueries();
})();
