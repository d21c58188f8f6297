"""The page around the graph view: a header, a legend of the types shown, and a details
panel that shows a clicked turn's text or a clicked fact's provenance (the turns it came
from). The bundle reports clicks by writing ``last_event`` into the data object it parsed;
the small script here catches that object as it is parsed and listens for the writes."""

from __future__ import annotations

import html
import json
from typing import Any

PAGE_CSS = """
html, body { margin: 0; height: 100%; font-family: system-ui, sans-serif; }
.tg-layout { display: flex; height: 100vh; }
.tg-graph { flex: 1 1 auto; min-width: 0; }
.tg-side { flex: 0 0 320px; overflow-y: auto; border-left: 1px solid #ddd; padding: 12px;
  box-sizing: border-box; font-size: 13px; color: #222; background: #fafafa; }
.tg-side h1 { font-size: 15px; margin: 0 0 4px; }
.tg-side h2 { font-size: 13px; margin: 14px 0 6px; text-transform: uppercase;
  letter-spacing: .04em; color: #555; }
.tg-note { color: #8a4b00; }
.tg-legend { list-style: none; padding: 0; margin: 0; }
.tg-legend li { display: flex; align-items: center; gap: 8px; margin: 3px 0; }
.tg-swatch { width: 12px; height: 12px; border-radius: 50%; flex: 0 0 12px; }
.tg-count { color: #777; margin-left: auto; }
.tg-text { white-space: pre-wrap; overflow-wrap: break-word; hyphens: none;
  background: #fff; border: 1px solid #e3e3e3; padding: 8px; border-radius: 4px; }
.tg-meta { color: #666; margin: 4px 0; }
.tg-prov li { margin: 4px 0; }
"""

PAGE_SCRIPT = """
(function () {
  var view = JSON.parse(document.getElementById('turngraph-view').textContent);
  var dataText = document.getElementById('neo4j-viz-data').textContent;
  var parse = JSON.parse;
  JSON.parse = function (text) {
    var value = parse.apply(this, arguments);
    if (text === dataText && value && typeof value === 'object') {
      JSON.parse = parse;
      var last = value.last_event;
      Object.defineProperty(value, 'last_event', {
        configurable: true,
        get: function () { return last; },
        set: function (event) { last = event; show(event); }
      });
    }
    return value;
  };
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function provenance(ids) {
    var list = el('ul', 'tg-prov');
    (ids || []).forEach(function (id) {
      var turn = view.turns[id];
      list.appendChild(el('li', '', turn ? turn.when + ' ' + turn.role + ': ' + turn.snippet : id));
    });
    return list;
  }
  function show(event) {
    var panel = document.getElementById('tg-details');
    panel.textContent = '';
    if (!event || !event.id) { panel.appendChild(el('p', 'tg-meta', view.hint)); return; }
    var item = event.type.indexOf('node') === 0 ? view.nodes[event.id] : view.rels[event.id];
    if (!item) return;
    panel.appendChild(el('h1', '', item.title));
    panel.appendChild(el('p', 'tg-meta', item.meta));
    if (item.text) panel.appendChild(el('div', 'tg-text', item.text));
    if (item.provenance && item.provenance.length) {
      panel.appendChild(el('h2', '', 'stated in ' + item.provenance.length + ' turn(s)'));
      panel.appendChild(provenance(item.provenance));
    }
    window.turngraphShown = event.id;
  }
  window.turngraphShow = show;
})();
"""


def render_shell(
    *,
    title: str,
    summary: str,
    note: str | None,
    legend: list[tuple[str, str, int]],
    view_data: dict[str, Any],
    data_block: str,
    head_assets: str,
    body_assets: str = "",
) -> str:
    """The page: layout, legend, details panel, the viz data, and the bundle's assets."""
    items = "\n".join(
        f'<li><span class="tg-swatch" style="background:{html.escape(color)}"></span>'
        f'{html.escape(label)}<span class="tg-count">{count}</span></li>'
        for label, color, count in legend
    )
    view_json = json.dumps(view_data).replace("<", "\\u003c")
    warning = f'<p class="tg-note">{html.escape(note)}</p>' if note else ""
    return f"""<!doctype html>
<html lang="en" class="light">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>{PAGE_CSS}</style>
{head_assets}
{data_block}
<script type="application/json" id="turngraph-view">{view_json}</script>
<script>{PAGE_SCRIPT}</script>
</head>
<body>
<div class="tg-layout">
  <div class="tg-graph"><div id="neo4j-viz-container"></div></div>
  <aside class="tg-side">
    <h1>{html.escape(title)}</h1>
    <p class="tg-meta">{html.escape(summary)}</p>
    {warning}
    <h2>Legend</h2>
    <ul class="tg-legend" id="tg-legend">
{items}
    </ul>
    <h2>Details</h2>
    <div id="tg-details"><p class="tg-meta">{html.escape(view_data["hint"])}</p></div>
  </aside>
</div>
{body_assets}
</body>
</html>
"""
