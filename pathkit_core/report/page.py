"""The HTML of a report page: sections, tables (sortable, filterable), figures, folded parts. A page is one
file with inline style and script and figures as data URIs: it opens from disk, with no server or network."""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Section:
    """One part of a report: a heading and its HTML body.

    `key` names the section in the page (its anchor, `id="section-<key>"`); `order` places it
    (lower first; the core's headline scores are 0, task sections 100, plugin sections 200,
    training 300, quality control 400, provenance 900)."""

    title: str
    body: str
    key: str = ""
    order: int = 100
    level: int = 2
    notes: list[str] = field(default_factory=list)

    def render(self) -> str:
        anchor = f' id="section-{esc(self.key)}"' if self.key else ""
        notes = "".join(f'<p class="note">{esc(n)}</p>' for n in self.notes)
        return f"<section{anchor}><h{self.level}>{esc(self.title)}</h{self.level}>{notes}{self.body}</section>"


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def number(value: Any, digits: int = 4) -> str:
    """A cell's number as text (integers without decimals, NaN as "n/a")."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(x):
        return "n/a"
    return f"{x:.{digits}f}"


def _sort_value(value: Any) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int | float) and not (isinstance(value, float) and not math.isfinite(value)):
        return repr(float(value))
    return ""


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, table_id: str = "", sortable: bool = False,
          filterable: bool = False, numeric_filters: Sequence[str] = (), classes: str = "",
          cell_html: Sequence[int] = (), text_columns: Sequence[int] = (), caption: str = "") -> str:
    """An HTML table. Numbers are formatted by `number` and carry their value for sorting; the
    columns at positions `cell_html` hold ready HTML (links, lists), every other cell is escaped;
    the columns at `text_columns` hold long text (reports), given room and wrapped.

    `sortable`: a click on a header sorts by that column. `filterable`: a search box over the
    text, and a min/max filter on each column named in `numeric_filters` (e.g. a score)."""
    ident = f' id="{esc(table_id)}"' if table_id else ""
    kinds = " ".join(k for k, on in (("sortable", sortable), ("filterable", filterable)) if on)
    head = "".join(f'<th title="{"sort by " + esc(h) if sortable else ""}">{esc(h)}</th>' for h in headers)
    body = []
    for row in rows:
        cells = []
        for j, value in enumerate(row):
            if j in cell_html:
                cells.append(f'<td class="html">{value}</td>')
                continue
            if j in text_columns:
                cells.append(f'<td class="text">{esc(value)}</td>')
                continue
            sort = _sort_value(value)
            attr = f' data-v="{sort}" class="num"' if sort else ""
            text = number(value) if sort or value is None else str(value)
            cells.append(f"<td{attr}>{esc(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    controls = ""
    if filterable:
        options = "".join(f'<option value="{headers.index(c)}">{esc(c)}</option>' for c in numeric_filters
                          if c in headers)
        numeric = (f'<label>score <select class="f-col">{options}</select></label>'
                   f'<label>from <input class="f-min" type="number" step="any" size="6"></label>'
                   f'<label>to <input class="f-max" type="number" step="any" size="6"></label>') if options else ""
        controls = (f'<div class="filters" data-for="{esc(table_id)}"><label>search <input class="f-text" '
                    f'type="search" size="18"></label>{numeric}<span class="f-count"></span></div>')
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    return (f'{controls}<div class="table-wrap"><table{ident} class="{kinds} {classes}">{cap}<thead><tr>{head}'
            f'</tr></thead><tbody>{"".join(body)}</tbody></table></div>')


def details(summary: str, body: str, *, open_: bool = False) -> str:
    """A folded part: `summary` shown, `body` on a click."""
    return f'<details{" open" if open_ else ""}><summary>{esc(summary)}</summary>{body}</details>'


def pre_json(value: Any) -> str:
    return "<pre>" + esc(json.dumps(value, indent=2, default=str, sort_keys=True)) + "</pre>"


def warning(text: str) -> str:
    return f'<p class="warning"><b>Warning:</b> {esc(text)}</p>'


def link(href: str, text: str) -> str:
    return f'<a href="{esc(href)}">{esc(text)}</a>'


def tags(items: Sequence[str], kind: str) -> str:
    """Field names as small labels (CRQS matched / missed / hallucinated / discordant)."""
    return " ".join(f'<span class="tag {kind}">{esc(i)}</span>' for i in items)


STYLE = """
:root{--fg:#1d1d1f;--muted:#5f6368;--line:#d9dce1;--head:#f2f4f7;--accent:#2457a6}
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;padding:1.5em 2em;max-width:78em;
color:var(--fg);line-height:1.4;font-size:15px}
h1{font-size:1.6em;margin:.2em 0}h2{font-size:1.3em;margin-top:1.8em;border-bottom:2px solid var(--line);
padding-bottom:.2em}h3{font-size:1.08em;margin-top:1.3em}
section{margin-bottom:1em}
.meta{color:var(--muted)}.note{color:var(--muted);font-size:.92em;margin:.3em 0}
.table-wrap{max-width:100%;overflow-x:auto;margin:.6em 0}
table{border-collapse:collapse;font-size:.92em}
td,th{border:1px solid var(--line);padding:.28em .55em;text-align:left;vertical-align:top}
th{background:var(--head);position:sticky;top:0}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.sortable th{cursor:pointer}table.sortable th:hover{background:#e4e8ee}
table.cases td{max-width:28em}table.cases td.text{min-width:14em;font-size:.9em}
table.cases td.html{min-width:13em;max-width:18em}
caption{caption-side:bottom;text-align:left;color:var(--muted);font-size:.88em;padding-top:.3em}
.headline td:first-child{font-weight:600}
table.cells td{white-space:nowrap}
table.views{font-size:.84em}table.views td{min-width:6.5em}
table.views td:first-child{white-space:nowrap;min-width:0}
figure{margin:.8em 0;display:inline-block;vertical-align:top;max-width:100%}
figure img{max-width:100%;height:auto;border:1px solid var(--line);background:#fff}
figcaption{color:var(--muted);font-size:.88em;max-width:44em}
.gallery{display:flex;flex-wrap:wrap;gap:1em}.gallery figure{margin:0;width:19em}
.filters{display:flex;flex-wrap:wrap;gap:.8em;align-items:center;margin:.4em 0;font-size:.92em}
.filters input,.filters select{font:inherit}.f-count{color:var(--muted)}
.tag{display:inline-block;border-radius:3px;padding:0 .3em;margin:.05em;font-size:.85em;white-space:nowrap}
.tag.matched{background:#dcefdc}.tag.missed{background:#fbe3c8}.tag.hallucinated{background:#f7d4d4}
.tag.discordant{background:#e6dcf5}
.warning{border:2px solid #c00;padding:.6em;color:#900}
.banner{background:#c00;color:#fff;font-weight:bold;padding:.7em 1em;margin:0 0 .6em}
pre{background:#f7f7f7;padding:.6em;overflow:auto;max-height:32em;font-size:.85em}
details{margin:.6em 0}summary{cursor:pointer;font-weight:600}
nav.toc{font-size:.92em;margin:.5em 0 1em}nav.toc a{margin-right:1em;color:var(--accent)}
a{color:var(--accent)}
"""

# Sorting and filtering of tables marked sortable / filterable; nothing is fetched.
SCRIPT = """
(function(){
function val(td){return td.hasAttribute('data-v')?parseFloat(td.getAttribute('data-v')):null}
document.querySelectorAll('table.sortable').forEach(function(t){
  t.querySelectorAll('thead th').forEach(function(th,i){
    th.addEventListener('click',function(){
      var body=t.tBodies[0],rows=Array.prototype.slice.call(body.rows);
      var up=th.getAttribute('data-dir')!=='asc';
      t.querySelectorAll('thead th').forEach(function(o){o.removeAttribute('data-dir')});
      th.setAttribute('data-dir',up?'asc':'desc');
      rows.sort(function(a,b){
        var x=a.cells[i],y=b.cells[i],vx=val(x),vy=val(y),r;
        if(vx!==null||vy!==null){r=(vx===null?Infinity:vx)-(vy===null?Infinity:vy)}
        else{r=x.textContent.localeCompare(y.textContent)}
        return up?r:-r});
      rows.forEach(function(r){body.appendChild(r)});
    });
  });
});
document.querySelectorAll('div.filters').forEach(function(f){
  var t=document.getElementById(f.getAttribute('data-for'));if(!t)return;
  var text=f.querySelector('.f-text'),col=f.querySelector('.f-col'),lo=f.querySelector('.f-min'),
      hi=f.querySelector('.f-max'),count=f.querySelector('.f-count');
  function apply(){
    var q=(text.value||'').toLowerCase(),c=col?parseInt(col.value,10):-1,
        a=lo&&lo.value!==''?parseFloat(lo.value):null,b=hi&&hi.value!==''?parseFloat(hi.value):null,shown=0;
    Array.prototype.forEach.call(t.tBodies[0].rows,function(r){
      var ok=!q||r.textContent.toLowerCase().indexOf(q)>=0;
      if(ok&&c>=0&&(a!==null||b!==null)){var v=val(r.cells[c]);
        ok=v!==null&&(a===null||v>=a)&&(b===null||v<=b)}
      r.style.display=ok?'':'none';if(ok)shown++});
    count.textContent=shown+' of '+t.tBodies[0].rows.length+' rows';
  }
  [text,col,lo,hi].forEach(function(e){if(e){e.addEventListener('input',apply);e.addEventListener('change',apply)}});
  apply();
});
})();
"""


def failed_section(title: str, exc: BaseException, order: int, key: str = "") -> Section:
    """What a section that raised becomes: a warning naming the exception; the rest of the page is kept."""
    import traceback

    detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return Section(title, f'<p class="warning">This section could not be drawn: {esc(detail)}</p>', order=order,
                   key=key or f"failed-{abs(hash(title)) % 10**6}")


def plugin_sections(registry: Any, hook_name: str, subject: Any, order: int = 200) -> list[Section]:
    """The sections plugins add through report hook `hook_name` ("report_sections",
    "matrix_report_sections", "suite_report_sections"); a plugin that raised gets a warning section naming it."""
    out: list[Section] = []
    for plugin, found in registry.report_sections(hook_name, subject):
        if isinstance(found, BaseException):
            out.append(failed_section(f"Section of plugin {plugin}", found, order, key=f"plugin-{plugin}"))
        else:
            out.extend(found)
    return out


def banner(text: str) -> str:
    """A provenance banner (synthetic data, random encoder weights): above everything else."""
    return f'<p class="banner provenance" role="alert">{esc(text)}</p>'


def page(title: str, subtitle: str, sections: Sequence[Section], *, warnings: Sequence[str] = (),
         banners: Sequence[str] = ()) -> str:
    """The whole document: provenance banners, title, warnings, a table of contents, the sections
    in their order."""
    ordered = sorted(sections, key=lambda s: s.order)
    toc = "".join(f'<a href="#section-{esc(s.key)}">{esc(s.title)}</a>' for s in ordered if s.key and s.level == 2)
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>",
        *(banner(b) for b in banners),
        f"<h1>{esc(title)}</h1><p class=meta>{subtitle}</p>",
        *(warning(w) for w in warnings),
        f'<nav class="toc">{toc}</nav>' if toc else "",
        *(s.render() for s in ordered),
        f"<script>{SCRIPT}</script></body></html>",
    ]
    return "\n".join(parts)


__all__ = ["Section", "banner", "details", "esc", "failed_section", "link", "number", "page", "plugin_sections",
           "pre_json", "table", "tags", "warning"]
