"""The HTML of make report (tools/report.py): results/TREE/report.html,
one self-contained page per tree, and results/index.html; and the
JavaScript with which make check reads back what the page shows.

The page inlines the mutation-testing-elements bundle (an IIFE that
defines <mutation-test-report-app>) and the report's JSON (in a
<script type="application/json">, '</' escaped), so that it opens from
disk with no network. Figures come from report.figures() only.
"""
from __future__ import annotations

import html
import json
import os
from typing import Any, Callable, Dict, List, Tuple

STYLE = '''
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1f2328; }
header, section.facts { padding: 12px 24px; }
header h1 { font-size: 20px; margin: 0 0 4px; }
table.figures { border-collapse: collapse; margin: 8px 0; }
table.figures th, table.figures td { border: 1px solid #d0d7de;
  padding: 3px 8px; text-align: right; }
table.figures th:first-child, table.figures td:first-child {
  text-align: left; }
table.figures tr.all td { font-weight: bold; }
.bad { color: #b3261e; }
ul.links { margin: 4px 0; padding-left: 20px; }
.missing { color: #888; }
details { margin: 6px 0; }
.trees { display: flex; gap: 24px; flex-wrap: wrap; }
.tree { border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 16px; }
.tree img { width: 420px; border: 1px solid #d0d7de; }
'''

# The counts of the component's metrics table, 'All files' row:
# {column label: text}, or null until it has rendered.
METRICS_JS = r'''(() => {
  function deep(root, sel) {
    const hit = root.querySelector(sel);
    if (hit) return hit;
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) {
        const h = deep(el.shadowRoot, sel);
        if (h) return h;
      }
    }
    return null;
  }
  const app = document.querySelector('mutation-test-report-app');
  if (!app || !app.shadowRoot) return null;
  const mt = deep(app.shadowRoot, 'mte-metrics-table');
  const root = mt && (mt.shadowRoot || mt);
  const table = root && root.querySelector('table');
  if (!table) return null;
  const text = el => el.textContent.replace(/\s+/g, ' ').trim();
  // The first header row: name, 'Mutation Score' (two columns, of
  // total and of covered, each a bar and a figure), then one column
  // per count, Killed to Total: the last cells of the row.
  const head = table.querySelector('thead tr');
  const row = table.querySelector('tbody tr');
  if (!head || !row) return null;
  const heads = [...head.children].map(text);
  const labels = heads.slice(heads.indexOf('Killed'));
  const cells = [...row.children].map(text).slice(-labels.length);
  if (heads.indexOf('Killed') < 0 || cells.length < labels.length)
    return null;
  const out = {row: text(row.children[0])};
  labels.forEach((h, i) => { out[h] = cells[i]; });
  return out;
})()'''

# The page's own headline, row 'all': {key: text}.
HEADLINE_JS = r'''(() => {
  const out = {};
  for (const td of document.querySelectorAll('tr.all td[data-key]'))
    out[td.dataset.key] = td.textContent.trim();
  return out;
})()'''

COLUMNS: List[Tuple[str, str, Callable[[Dict[str, Any]], str]]] = [
    ('mutants run', 'ran', lambda t: '%d' % t['ran']),
    ('of generated', 'generated', lambda t: '%d' % t['generated']),
    ('killed', 'killed', lambda t: '%d' % t['killed']),
    ('survived', 'survived', lambda t: '%d' % t['survived']),
    ('of them: no coverage', 'no_coverage', lambda t: '%d'
     % t['no_coverage']),
    ('equivalent (Ignored)', 'equivalent', lambda t: '%d' % t['equivalent']),
    ('killed though declared equivalent', 'catalogue_errors',
     lambda t: '%d' % t['catalogue_errors']),
    ('not building / not applying', 'compile', lambda t: '%d / %d'
     % (t['nocompile'], t['noapply'])),
    ('score', 'score', lambda t: '-' if t['score'] is None
     else '%.1f%%' % t['score']),
]


def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def figures_table(figs: Dict[str, Any]) -> str:
    """The headline table of a tree: catalogue, generated, all."""
    out = ['<table class="figures"><tr><th></th>%s</tr>' % ''.join(
        '<th>%s</th>' % esc(c[0]) for c in COLUMNS)]
    for g, label in (('catalogue', 'catalogue (make mutants)'),
                     ('generated', 'generated (make mutants-generated)'),
                     ('all', 'all')):
        t = figs[g]
        if '-ci' in t.get('source', ''):
            label = "%s (make check's CI %s)" % (
                g, 'subset' if g == 'catalogue' else 'sample')
        if not t['present']:
            out.append('<tr><td>%s</td><td colspan="%d" class="missing">'
                       'no run in results/</td></tr>'
                       % (esc(label), len(COLUMNS)))
            continue
        cells = []
        for _label, key, fn in COLUMNS:
            bad = key in ('survived', 'catalogue_errors') and t[key] or \
                key == 'compile' and t['nocompile'] + t['noapply']
            cells.append('<td data-key="%s"%s>%s</td>' % (
                key, ' class="bad"' if bad else '', esc(fn(t))))
        out.append('<tr class="%s"><td>%s</td>%s</tr>'
                   % (g, esc(label), ''.join(cells)))
    out.append('</table>')
    return '\n'.join(out)


def kunit_table(k: Dict[str, Any]) -> str:
    """The KUnit results of the tree's make test run, per suite."""
    if not k:
        return '<p class="missing">No KUnit results (results/TREE/' \
            'summary.json): run make test.</p>'
    rows = ''.join(
        '<tr><td>%s</td><td>%d</td><td%s>%d</td><td>%d</td></tr>'
        % (esc(s['name']), s['passed'], ' class="bad"' if s['failed']
           else '', s['failed'], s['skipped']) for s in k['suites'])
    return ('<details><summary>KUnit (make test): %d passed, %d failed, '
            '%d skipped%s, in %d suites</summary>'
            '<table class="figures"><tr><th>suite</th><th>passed</th>'
            '<th>failed</th><th>skipped</th></tr>%s</table></details>'
            % (k['passed'], k['failed'], k['skipped'],
               ', the kernel crashed' if k['crashed'] else '',
               len(k['suites']), rows))


def page_html(figs: Dict[str, Any], report: Dict[str, Any], elements: str,
              links: List[Tuple[str, str, bool]],
              versions: Dict[str, str]) -> str:
    """results/TREE/report.html."""
    tree = figs['tree']
    data = json.dumps(report).replace('</', '<\\/')
    js = elements.replace('</script', '<\\/script')
    link_items = ''.join(
        '<li><a href="%s">%s</a></li>' % (esc(h), esc(label)) if ok else
        '<li class="missing">%s (not there yet)</li>' % esc(label)
        for label, h, ok in links)
    return '''<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>gup-pin-kunit %(tree)s: would the suites catch a bug?</title>
<style>%(style)s</style></head>
<body>
<header><h1>gup-pin-kunit, tree %(tree)s: mutants of the pin core and
the KUnit suites</h1>
<p>Each mutant plants one bug in the pin core of the tree's series head;
a KUnit case that fails, or a crash, kills it. Below the figures, every
mutant on its line (mutation-testing-elements %(elv)s, report schema
%(scv)s).</p>
%(figures)s
%(kunit)s
<ul class="links">%(links)s</ul></header>
<mutation-test-report-app title-postfix="%(tree)s"></mutation-test-report-app>
<script>%(js)s</script>
<script id="report-data" type="application/json">%(data)s</script>
<script>
document.querySelector('mutation-test-report-app').report =
  JSON.parse(document.getElementById('report-data').textContent);
</script>
</body></html>
''' % dict(tree=esc(tree), style=STYLE, figures=figures_table(figs),
           kunit=kunit_table(figs['kunit']), links=link_items, js=js,
           data=data, elv=esc(versions.get('mutation-testing-elements')),
           scv=esc(versions.get('mutation-testing-report-schema')))


def index_html(all_figs: List[Dict[str, Any]], results: str) -> str:
    """results/index.html (results: its directory): the trees side by
    side, each with its page's screenshot if make check took one."""
    blocks = []
    for f in all_figs:
        t = f['tree']
        k = f['kunit']
        shot = ('<a href="%s/report.html"><img src="%s/report.png" '
                'alt="the report page of %s"></a>' % (esc(t), esc(t), esc(t))
                if os.path.exists(os.path.join(results, t, 'report.png'))
                else '')
        blocks.append(
            '<div class="tree"><h2><a href="%s/report.html">%s</a></h2>'
            '<p>KUnit: %s</p>%s%s</div>' % (
                esc(t), esc(t),
                '%d passed, %d failed, %d skipped' % (
                    k['passed'], k['failed'], k['skipped']) if k
                else 'no results', figures_table(f), shot))
    return '''<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>gup-pin-kunit: mutation reports</title>
<style>%s</style></head><body>
<header><h1>gup-pin-kunit: would the suites catch a bug in the pin
core?</h1><p>Each tree's page shows every mutant on its source line.
The same figures: results/figures.md.</p></header>
<section class="facts"><div class="trees">%s</div></section>
</body></html>
''' % (STYLE, '\n'.join(blocks))
