"""Tests for the tree-independent parts of tools/export_series.py.

The export itself needs build/linux and takes minutes (two full kernel
worktrees), so it is exercised by `make series`, not here.
"""

import importlib.util
import os
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOOLS = HERE.parent
sys.path.insert(0, str(TOOLS))
SPEC = importlib.util.spec_from_file_location('export_series',
                                              TOOLS / 'export_series.py')
es = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(es)


class ExportSeriesTest(unittest.TestCase):
    def test_signoff(self):
        msg = ('subj\n\nbody\n\nSigned-off-by: A B <a@b.org>\n'
               'Signed-off-by: C <c@d.org>\n')
        self.assertEqual(es.signoff(msg), ('A B', 'a@b.org'))
        with self.assertRaises(es.ToolError):
            es.signoff('subj\n\nno trailer\n')

    def test_cover(self):
        subject, blurb = es.parse_cover('Subj line\n\nPara one.\n\nTwo.\n')
        self.assertEqual((subject, blurb), ('Subj line', 'Para one.\n\nTwo.'))
        tmpl = ('Subject: [PATCH 0/2] *** SUBJECT HERE ***\n\n'
                '*** BLURB HERE ***\n\nA (2):\n')
        self.assertEqual(es.fill_cover(tmpl, subject, blurb),
                         'Subject: [PATCH 0/2] Subj line\n\nPara one.\n\n'
                         'Two.\n\nA (2):\n')
        with self.assertRaises(es.ToolError):
            es.fill_cover('no placeholders', subject, blurb)

    def test_export_sources_skips_harness_files(self):
        with tempfile.TemporaryDirectory() as d:
            for rel in ('mm/gup_kunit.c', 'mm/sub/x.h', 'mutants/m.patch',
                        'qemu_x86_64.py', 'suites', 'lib/suites'):
                os.makedirs(os.path.dirname(os.path.join(d, rel)) or d,
                            exist_ok=True)
                Path(d, rel).write_text('x\n')
            self.assertEqual(sorted(es.export_sources(d)),
                             ['lib/suites', 'mm/gup_kunit.c', 'mm/sub/x.h'])

    def test_real_inputs_parse(self):
        root = TOOLS.parent
        msg = (root / 'patches' / 'kunit-tests.msg').read_text()
        self.assertTrue(msg.startswith(
            'mm/gup: add KUnit tests for FOLL_PIN accounting\n\n'))
        es.signoff(msg)
        subject, _ = es.parse_cover(
            (root / 'patches' / 'cover-letter.txt').read_text())
        self.assertTrue(subject.startswith('mm/gup: KUnit tests for pin '
                                           'accounting'), subject)
        self.assertNotIn('\n', subject)


if __name__ == '__main__':
    unittest.main()
