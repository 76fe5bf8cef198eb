"""The results of several trees together: results/junit.xml and
results/summary.json (tools/run_suite.py, tools/check.py).

Each tree's own results (results/TREE/junit.xml and summary.json, written
by tools/ktap_report.py) are read back, the JUnit testsuites and
classnames prefixed with the tree (6.1/gup_pin), and the counts summed; a
tree that could not be built or run counts as one failed test. Also the
XML helpers that ktap_report's JUnit writer shares, and the reader of the
'N passed, N failed, N skipped' line that every tool prints last.

tools/ktap_report.py imports these names, so that its callers find them
there as before.
"""

from __future__ import annotations

import json
import os
import re
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import display  # noqa: E402

XML_BAD_RE = re.compile(
    '[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]')


def clean_xml(text: str) -> str:
    """Replace characters that XML 1.0 cannot carry."""
    return XML_BAD_RE.sub('\ufffd', text)


def sub_element(parent: ET.Element, tag: str, message: str | None,
                text: str = '') -> None:
    """Append <tag message="..."> with text, both XML-clean."""
    attrs = {} if message is None else {'message': clean_xml(message)}
    element = ET.SubElement(parent, tag, attrs)
    if text:
        element.text = clean_xml(text)


COUNTS_RE = re.compile(r'^(\d+) passed, (\d+) failed, (\d+) skipped$')
COMBINED_FILES = ('junit.xml', 'summary.json')
TREE_ERROR_SUITE = '<tree>'
TREE_ERROR_CASE = 'prepare, build and run'


def parse_counts(line: str) -> tuple[int, int, int] | None:
    """(passed, failed, skipped) of an 'N passed, N failed, N skipped'
    line, or None."""
    match = COUNTS_RE.match(line.strip())
    if not match:
        return None
    passed, failed, skipped = (int(g) for g in match.groups())
    return passed, failed, skipped


def remove_combined(out_dir: str) -> None:
    """Remove the combined files of an earlier run from out_dir."""
    for name in COMBINED_FILES:
        try:
            os.unlink(os.path.join(out_dir, name))
        except FileNotFoundError:
            pass


def _tree_error(tree: str, results: str,
                error: str) -> tuple[dict, ET.Element]:
    doc = {'results': display(results), 'error': error, 'passed': 0,
           'failed': 1, 'skipped': 0, 'crashed': False,
           'crash_reason': None, 'missing_suites': [], 'suites': []}
    suite = ET.Element('testsuite', {'name': f'{tree}/{TREE_ERROR_SUITE}',
                                     'tests': '1', 'failures': '0',
                                     'errors': '1', 'skipped': '0'})
    case = ET.SubElement(suite, 'testcase', {
        'classname': f'{tree}/{TREE_ERROR_SUITE}', 'name': TREE_ERROR_CASE})
    sub_element(case, 'error', error)
    return doc, suite


def _tree_results(tree: str, results: str) -> tuple[dict, list[ET.Element]]:
    """The summary.json document and the JUnit testsuites of one tree,
    renamed TREE/SUITE; a missing or unreadable file is a tree error."""
    try:
        with open(os.path.join(results, 'summary.json'),
                  encoding='utf-8') as file:
            doc = json.load(file)
        root = ET.parse(os.path.join(results, 'junit.xml')).getroot()
    except (OSError, ValueError, ET.ParseError) as err:
        doc, suite = _tree_error(tree, results, f'no results in {results} '
                                 f'({err.__class__.__name__}: {err})')
        return doc, [suite]
    doc = {'results': display(results), **doc}
    suites = []
    for suite in root.iter('testsuite'):
        suite.set('name', f'{tree}/{suite.get("name", "")}')
        for case in suite.iter('testcase'):
            case.set('classname', f'{tree}/{case.get("classname", "")}')
        suites.append(suite)
    return doc, suites


def combine(runs: list[tuple[str, str, str | None]]
            ) -> tuple[dict, ET.ElementTree]:
    """The combined summary.json document and JUnit tree of several trees.

    runs: (tree, results directory, error or None), in order; a tree with
    an error (it could not be built or run) counts as one failed test.
    """
    trees: dict[str, dict] = {}
    root = ET.Element('testsuites')
    for tree, results, error in runs:
        if error is None:
            doc, suites = _tree_results(tree, results)
        else:
            doc, suite = _tree_error(tree, results, error)
            suites = [suite]
        trees[tree] = doc
        root.extend(suites)
    totals = {key: sum(int(doc.get(key) or 0) for doc in trees.values())
              for key in ('passed', 'failed', 'skipped')}
    for attr in ('tests', 'failures', 'errors', 'skipped'):
        root.set(attr, str(sum(int(s.get(attr) or 0) for s in root)))
    summary_doc = {**totals,
                   'crashed': any(doc.get('crashed') for doc in
                                  trees.values()),
                   'trees': trees}
    tree_xml = ET.ElementTree(root)
    ET.indent(tree_xml)
    return summary_doc, tree_xml


def write_combined(runs: list[tuple[str, str, str | None]],
                   out_dir: str) -> dict:
    """Write out_dir/junit.xml and out_dir/summary.json over the trees of
    runs (see combine()); return the summary document."""
    summary_doc, tree_xml = combine(runs)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, 'junit.xml')
    tree_xml.write(path + '.tmp', encoding='utf-8', xml_declaration=True)
    os.replace(path + '.tmp', path)
    path = os.path.join(out_dir, 'summary.json')
    with open(path + '.tmp', 'w', encoding='utf-8') as file:
        json.dump(summary_doc, file, indent=2)
        file.write('\n')
    os.replace(path + '.tmp', path)
    return summary_doc
