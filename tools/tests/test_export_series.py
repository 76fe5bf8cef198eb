"""Tests of tools/export_series.py (`make series`).

The pure parts in-process; the whole export as a program against a tiny
fake tree (fakes.py): a patch by the project placeholder, a backport with
its upstream author, a kunit/ with common, per-tree and harness sources.
Nothing touches build/, results/ or the real package database.
"""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

HERE = Path(__file__).resolve().parent
TOOLS = HERE.parent
sys.path.insert(0, str(TOOLS))
sys.path.insert(0, str(HERE))
from fakes import (DPKG_QUERY_TREE, clean_env, git, install,  # noqa: E402
                   make_kunit, make_source, make_tarball, run_tool,
                   write_exe)

SPEC = importlib.util.spec_from_file_location('export_series',
                                              TOOLS / 'export_series.py')
es = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(es)

RUNNER = ('Ann Runner', 'ann@runner.org')
UPSTREAM = ('Upstream Author', 'upstream@kernel.org')
PLACEHOLDER = ('gup-pin-kunit', 'gup-pin-kunit@localhost')
COVER = 'mm/gup: KUnit tests for pin accounting\n\nThe blurb.\n'


class PureParts(unittest.TestCase):
    def test_placeholder_authors(self):
        for email in ('gup-pin-kunit@localhost', 't@LOCALHOST',
                      'gup-pin-kunit@example.org', 'x@example.com'):
            self.assertTrue(es.is_placeholder(email), email)
        for email in ('michal.wajdeczko@intel.com', 'a@localhost.org',
                      'a@example.org.uk', 'ann@runner.org'):
            self.assertFalse(es.is_placeholder(email), email)

    def test_placeholder_signoffs_are_dropped(self):
        msg = ('subj\n\nbody\n\nFixes: 0123456789ab ("x")\n'
               'Signed-off-by: Upstream Author <upstream@kernel.org>\n'
               'Signed-off-by: gup-pin-kunit maintainers '
               '<gup-pin-kunit@example.org>\n\n')
        self.assertEqual(es.drop_placeholder_signoffs(msg),
                         'subj\n\nbody\n\nFixes: 0123456789ab ("x")\n'
                         'Signed-off-by: Upstream Author '
                         '<upstream@kernel.org>\n')

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
        with self.assertRaisesRegex(es.ToolError, 'no blurb'):
            es.parse_cover('Only a subject\n')

    def test_runner_identity(self):
        with tempfile.TemporaryDirectory() as repo:
            subprocess.run(['git', 'init', '-q', repo], check=True)
            env = clean_env()
            with mock.patch.dict(os.environ, env, clear=True):
                with self.assertRaisesRegex(es.ToolError,
                                            r'^git config user\.name is '
                                            r'unset; .*git config user\.name'):
                    es.runner_identity(repo)
                git(repo, 'config', 'user.name', RUNNER[0])
                with self.assertRaisesRegex(es.ToolError,
                                            'user.email is unset'):
                    es.runner_identity(repo)
                git(repo, 'config', 'user.email', 'me@localhost')
                with self.assertRaisesRegex(es.ToolError, 'a placeholder'):
                    es.runner_identity(repo)
                git(repo, 'config', 'user.email', RUNNER[1])
                self.assertEqual(es.runner_identity(repo), RUNNER)

    def test_real_inputs_parse(self):
        """Each tree's stored cover letter and, if it has one, test commit
        message."""
        found = 0
        patches = TOOLS.parent / 'patches'
        for tree_dir in sorted(d for d in patches.iterdir() if d.is_dir()):
            cover = tree_dir / 'cover-letter.txt'
            if not cover.exists():
                continue
            found += 1
            subject, _ = es.parse_cover(cover.read_text())
            self.assertNotIn('\n', subject)
        self.assertGreaterEqual(found, 1)


def upstream_patch(workdir):
    """A backport: a patch of the fake tree by an upstream author, with his
    sign-off and a placeholder one."""
    repo = workdir / 'upstream-repo'
    make_source(repo, '6.1.192')
    gitu = ['-c', 'user.name=%s' % UPSTREAM[0],
            '-c', 'user.email=%s' % UPSTREAM[1]]
    git(repo, 'init', '-q', '-b', 'main')
    git(repo, 'add', '-A', '-f', '.')
    git(repo, *gitu, 'commit', '-q', '-m', 'base')
    kc = repo / 'mm' / 'Kconfig'
    kc.write_text(kc.read_text() + 'config UPSTREAM_FIX\n\tbool\n')
    git(repo, *gitu, 'commit', '-q', '-am',
        'kunit: an upstream fix\n\nBackported.\n\n'
        'Signed-off-by: %s <%s>\n'
        'Signed-off-by: gup-pin-kunit maintainers '
        '<gup-pin-kunit@example.org>\n' % UPSTREAM)
    out = workdir / 'upstream'
    git(repo, 'format-patch', '-q', '-o', str(out), 'HEAD~1..HEAD')
    return next(out.glob('*.patch'))


def placeholder_patch(workdir):
    """The project's own patch, by the placeholder, without sign-off."""
    repo = workdir / 'own-repo'
    make_source(repo, '6.1.192')
    gitp = ['-c', 'user.name=%s' % PLACEHOLDER[0],
            '-c', 'user.email=%s' % PLACEHOLDER[1]]
    git(repo, 'init', '-q', '-b', 'main')
    git(repo, 'add', '-A', '-f', '.')
    git(repo, *gitp, 'commit', '-q', '-m', 'base')
    gup = repo / 'mm' / 'gup.c'
    gup.write_text(gup.read_text() + '#include "gup_kunit.c"\n')
    git(repo, *gitp, 'commit', '-q', '-am',
        'mm/gup: add a KUnit hook\n\nInclude the tests.\n\n'
        'Cc: stable@vger.kernel.org\n')
    out = workdir / 'own'
    git(repo, 'format-patch', '-q', '-o', str(out), 'HEAD~1..HEAD')
    return next(out.glob('*.patch'))


class Export(unittest.TestCase):
    """tools/export_series.py as `make series TREE=6.1` runs it."""

    @classmethod
    def setUpClass(cls):
        cls.fix = Path(tempfile.mkdtemp(prefix='gpk-export-fix-'))
        make_tarball(cls.fix, cls.fix / 'usr-src' / 'linux-source-6.1.tar.xz',
                     '6.1.192')
        cls.own = placeholder_patch(cls.fix)
        cls.backport = upstream_patch(cls.fix)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.fix)

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix='gpk-export-'))
        self.addCleanup(shutil.rmtree, self.tmp)
        self.stubs = self.tmp / 'stubs'
        self.stubs.mkdir()
        write_exe(self.stubs / 'dpkg-query', DPKG_QUERY_TREE)
        install(self.stubs, 'linux-source-6.1',
                self.fix / 'usr-src' / 'linux-source-6.1.tar.xz',
                '6.1.192-1')
        pdir = self.tmp / 'patches' / '6.1'
        pdir.mkdir(parents=True)
        names = []
        for n, src in enumerate((self.backport, self.own), 1):
            name = '%04d-%s' % (n, src.name[5:])
            shutil.copy(src, pdir / name)
            names.append(name)
        (pdir / 'series').write_text('\n'.join(names) + '\n')
        (pdir / 'cover-letter.txt').write_text(COVER)
        self.kunit = make_kunit(self.tmp / 'kunit')
        self.res = self.tmp / 'res'
        self.out = self.res / '6.1' / 'series'

    def export(self, ident=RUNNER, **extra):
        env = clean_env(PATH='%s:%s' % (self.stubs, os.environ['PATH']),
                        GPK_BUILD=self.tmp / 'build', GPK_RESULTS=self.res,
                        GPK_SRC_DIR=self.fix, GPK_PATCHES=self.tmp / 'patches',
                        GPK_KUNIT=self.kunit, GIT_CONFIG_COUNT=2,
                        GIT_CONFIG_KEY_0='user.name',
                        GIT_CONFIG_VALUE_0=ident[0],
                        GIT_CONFIG_KEY_1='user.email',
                        GIT_CONFIG_VALUE_1=ident[1], **extra)
        return run_tool([sys.executable, TOOLS / 'export_series.py',
                         '--tree', '6.1'], env, timeout=60)

    def patches(self):
        return {p.name: p.read_text() for p in sorted(self.out.iterdir())}

    def test_signed_by_the_runner(self):
        proc = self.export()
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(proc.stdout.splitlines()[-1],
                         'export_series: 6.1: 2 patches in %s (applies to '
                         'linux-source-6.1 6.1.192-1), signed off by %s <%s>'
                         % (self.out, RUNNER[0], RUNNER[1]))
        got = self.patches()
        names = list(got)
        self.assertEqual(len(names), 3, names)
        self.assertEqual(names[0], '0000-cover-letter.patch')
        backport, own = (got[n] for n in names[1:])
        signoff = 'Signed-off-by: %s <%s>' % RUNNER

        def trailers(text):
            return re.findall(r'^(?:Signed-off-by|Cc): .*$',
                              text.split('\n---\n')[0], re.M)
        # The backport keeps its author and his sign-off; the placeholder
        # sign-off goes; the runner's comes last.
        self.assertIn('\nFrom: %s <%s>\n' % UPSTREAM, backport)
        self.assertEqual(trailers(backport),
                         ['Signed-off-by: %s <%s>' % UPSTREAM, signoff])
        self.assertNotIn('example.org', backport)
        self.assertNotIn('gup_kunit', backport)
        # The placeholder's patch, the last one: the runner is its author
        # and signs it, and it carries the test sources.
        self.assertIn('\nFrom: %s <%s>\n' % RUNNER, own)
        self.assertIn('Subject: [PATCH 2/2] mm/gup: add a KUnit hook', own)
        self.assertEqual(trailers(own), ['Cc: stable@vger.kernel.org',
                                         signoff])
        self.assertIn('\nFrom: %s <%s>\n' % RUNNER, got[names[0]])
        self.assertIn('Subject: [PATCH 0/2] mm/gup: KUnit tests for pin '
                      'accounting', got[names[0]])
        for text in got.values():
            self.assertNotIn('localhost', text)
        # The exported files: the patch's own and the tree's non-harness
        # sources.
        self.assertEqual(sorted(re.findall(r'^diff --git a/(\S+) ', own,
                                           re.M)),
                         ['mm/gup.c', 'mm/gup_kunit.c', 'mm/gup_kunit_61.h'])
        self.assertFalse((self.tmp / 'build' / '6.1' / 'export-am').exists())

    def test_no_harness_file_is_exported(self):
        self.assertEqual(self.export().returncode, 0)
        for name, text in self.patches().items():
            self.assertNotIn('gup_kunit_harness', text, name)
            self.assertNotIn('harness', text.lower(), name)
        # The prepared tree has the harness commit, the export not.
        tree = self.tmp / 'build' / '6.1' / 'linux'
        self.assertIn('harness', git(tree, 'log', '-1', '--format=%s'))

    def test_reproducible_with_source_date_epoch(self):
        self.assertEqual(self.export(SOURCE_DATE_EPOCH=1700000000)
                         .returncode, 0)
        first = self.patches()
        self.assertIn('Date: Tue, 14 Nov 2023 22:13:20 +0000',
                      first['0000-cover-letter.patch'])
        self.assertEqual(self.export(SOURCE_DATE_EPOCH=1700000000)
                         .returncode, 0)
        self.assertEqual(self.patches(), first)

    def test_a_patch_that_adds_a_harness_file_is_refused(self):
        harness = self.kunit / 'harness' / 'mm' / 'gup_kunit_harness.c'
        (self.kunit / '6.1' / 'mm' / 'gup_kunit_harness.c').write_text('x')
        harness.unlink()
        harness.parent.rmdir()
        (self.kunit / 'harness' / 'mm').mkdir()
        harness.write_text('y')
        proc = self.export()
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(len(proc.stderr.splitlines()), 1, proc.stderr)
        self.assertIn('comes from both', proc.stderr)

    def test_identity_unset_is_refused(self):
        for ident, key in ((('', RUNNER[1]), 'user.name'),
                           ((RUNNER[0], ''), 'user.email')):
            with self.subTest(key=key):
                proc = self.export(ident)
                self.assertEqual(proc.returncode, 1)
                self.assertNotIn('Traceback', proc.stderr)
                self.assertEqual(len(proc.stderr.splitlines()), 1,
                                 proc.stderr)
                self.assertTrue(proc.stderr.startswith(
                    'export_series: git config %s is unset' % key),
                    proc.stderr)
                self.assertFalse((self.tmp / 'build').exists())
                self.assertFalse(self.out.exists())


if __name__ == '__main__':
    unittest.main()
