"""Tests of tools/genmut.py, the front end of the generated mutants: the
patches, the equivalents file, the CI sample, the reports and resume, a
run in each mode with the engine faked, the command line, and the
generator on the real trees when build/TREE/linux exists. No kernel is
built. (The operators: test_generator.py; the engine: test_mutation.py,
test_schemata.py.)"""

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import types
import unittest
from unittest import mock
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOOLS = HERE.parent
sys.path.insert(0, str(TOOLS))

import _cscan  # noqa: E402
import _generator as gen  # noqa: E402
import _mutation as mu  # noqa: E402
import _schemata as sch  # noqa: E402
from tests import fakes  # noqa: E402
from tests.test_generator import FILE, mutants_of  # noqa: E402

gm = fakes.load_tool('genmut')
common = sys.modules['_common']


@unittest.skipUnless(shutil.which('git'), 'git not installed')
class Patches(unittest.TestCase):
    def test_every_patch_applies_and_parses(self):
        with tempfile.TemporaryDirectory() as tmp:
            tree = Path(tmp, 'tree')
            (tree / 'mm').mkdir(parents=True)
            (tree / 'mm' / 'x.c').write_text(FILE)
            fakes.git(tree, 'init', '-q')
            fakes.git(tree, 'add', '-A')
            fakes.git(tree, 'commit', '-q', '-m', 'base')
            ms = mutants_of(FILE, 'f')
            eq = {ms[0].name: 'it is not, but the header is written'}
            paths = gm.write_patches(ms, eq, os.path.join(tmp, 'p'))
            self.assertEqual(len(paths), len(ms))
            for m, p in zip(ms, paths):
                chk = subprocess.run(['git', '-C', str(tree), 'apply',
                                      '--check', p], text=True,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
                self.assertEqual(chk.returncode, 0, chk.stdout + p)
                lm = mu.load_mutant(p)
                self.assertEqual(lm['name'], m.name)
                self.assertEqual(lm['files'], [('mm/x.c', 'modify')])
                self.assertEqual(lm['header']['models'],
                                 'generated: ' + m.op)
                self.assertTrue(lm['header']['subject'].startswith(m.name))
                self.assertEqual(bool(lm['header']['equivalent']),
                                 m.name in eq)
            # a second write leaves only the patches of the mutants given
            gm.write_patches(ms[:2], {}, os.path.join(tmp, 'p'))
            self.assertEqual(len(os.listdir(os.path.join(tmp, 'p'))), 2)


class Equivalents(unittest.TestCase):
    NAMES = {'f+2-del', 'f+3-negate-1'}

    def parse(self, text):
        return gm.parse_equivalents(text, 'eq', self.NAMES)

    def test_good(self):
        self.assertEqual(self.parse(
            '# why\n\nf+2-del  smp_mb() is empty on x86_64 here  # x\n'
            'f+3-negate-1 the branch ends in the same state either way\n'),
            {'f+2-del': 'smp_mb() is empty on x86_64 here',
             'f+3-negate-1': 'the branch ends in the same state either way'})

    def test_errors(self):
        for text, why in (
                ('f+2-del\n', r'^eq:1: f\+2-del has no reasoning'),
                ('# c\nf+2-del   # only a comment\n', r'^eq:2: .*no reason'),
                ('f+2-del equivalent\n', r'^eq:1: .*too short'),
                ('f+2-del one two three four\nf+2-del a b c d e\n',
                 r'^eq:2: f\+2-del is listed twice'),
                ('f+9-del the line is gone now really\n',
                 r'^eq:1: f\+9-del is stale'),
                ('002-foo it is a catalogue name here\n',
                 r'^eq:1: .*not a generated mutant name')):
            with self.assertRaisesRegex(common.ToolError, why, msg=text):
                self.parse(text)


class Sample(unittest.TestCase):
    def mutants(self, n, header_every=5):
        return [gen.Mutant(name='f+%d-del' % i, function='f',
                          file='mm/h.h' if i % header_every == 0
                          else 'mm/x.c', op='del', line=i, offset=i)
                for i in range(n)]

    def test_deterministic_and_of_c_files(self):
        ms = self.mutants(100)
        a = [m.name for m in gm.sample(ms, {}, 7, 20)]
        self.assertEqual(a, [m.name for m in gm.sample(ms, {}, 7, 20)])
        self.assertEqual(len(a), 20)
        self.assertTrue(all(not m.header for m in ms if m.name in a))
        self.assertNotEqual(a, [m.name for m in gm.sample(ms, {}, 8, 20)])
        self.assertEqual(gm.sample(ms, {}, '7', 20),
                         gm.sample(ms, {}, 7, 20))

    def test_equivalents_are_left_out(self):
        ms = self.mutants(100)
        a = gm.sample(ms, {}, 7, 20)
        b = gm.sample(ms, {a[0].name: 'x'}, 7, 20)
        self.assertNotIn(a[0], b)
        self.assertEqual(len(set(a) & set(b)), 19)

    def test_a_new_mutant_changes_at_most_one(self):
        ms = self.mutants(100)
        a = set(m.name for m in gm.sample(ms, {}, 7, 20))
        for extra in range(100, 130):
            more = ms + [gen.Mutant(name='g+%d-inc' % extra, function='g',
                                   file='mm/x.c', op='inc', line=1,
                                   offset=1)]
            b = set(m.name for m in gm.sample(more, {}, 7, 20))
            self.assertLessEqual(len(a - b), 1)

    def test_fewer_than_count(self):
        self.assertEqual(len(gm.sample(self.mutants(6), {}, 1, 20)), 4)


def entry(name, status, eq=False, **kw):
    e = {'name': name, 'status': status, 'cases': [], 'seconds': 1.0,
         'description': name, 'equivalent_claimed': eq}
    e.update(kw)
    return e


class Reports(unittest.TestCase):
    def setUp(self):
        self.ms = [gen.Mutant(name='f+%d-del' % i, function='f' if i < 6
                             else 'g', file='mm/x.c', op='del', line=i,
                             offset=i) for i in range(8)]

    def test_counts_and_score(self):
        es = {e['name']: e for e in (
            entry('f+0-del', 'killed'), entry('f+1-del', 'killed'),
            entry('f+2-del', 'equivalent', True),
            entry('f+3-del', 'survived'), entry('f+4-del', 'nocompile'),
            entry('f+5-del', 'killed', True), entry('f+6-del', 'noapply'))}
        c = gm.counts(self.ms, es)
        self.assertEqual(
            {k: c[k] for k in gm.COUNT_KEYS},
            {'generated': 8, 'compiled': 5, 'killed': 3, 'equivalent': 1,
             'survived': 1, 'nocompile': 1, 'noapply': 1, 'not_run': 1})
        self.assertEqual(c['catalogue_errors'], 1)
        self.assertEqual(c['score'], 80.0)
        self.assertIn('killed 3 (1 of them declared equivalent: wrongly), '
                      'equivalent 1', gm.score_line(c))
        del es['f+5-del']
        self.assertIn('killed 2, equivalent 1',
                      gm.score_line(gm.counts(self.ms, es)))
        es['f+5-del'] = entry('f+5-del', 'killed', True)
        self.assertEqual(gm.summary_counts(c), (3, 3, 1))
        tree = types.SimpleNamespace(name='6.1')
        rep = gm.report(tree, self.ms, list(es.values()), {'x': 1})
        self.assertEqual([f['function'] for f in rep['functions']],
                         ['f', 'g'])
        self.assertEqual(rep['functions'][1]['not_run'], 1)
        self.assertEqual(rep['operators'][0]['operator'], 'del')
        md = gm.markdown(rep)
        self.assertIn('| **total** | 8 | 5 | 3 | 1 | 1 | 1 | 1 | 1 | 80.0% |',
                      md)
        self.assertIn('declared equivalent: an error', md)


class Run(unittest.TestCase):
    """cmd_run with the suite runner faked: what runs, what is kept."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='genmut-run-')
        self.addCleanup(shutil.rmtree, self.tmp)
        self.tree = types.SimpleNamespace(
            name='6.1', linux=self.tmp,
            expand=lambda p: p.replace('{results}', self.tmp)
            .replace('{tree}', '6.1'))
        self.ms = mutants_of(FILE, 'f')[:4]
        self.ran = []
        self.status = 'killed'
        saved = (mu.run_patches, mu.tests_sha, mu.git)

        def fake_run(tree, loaded, results, timeout, jobs, runs, kept,
                     write, tool):
            es = list(kept)
            for lm in loaded:
                self.ran.append(lm['name'])
                e = entry(lm['name'], mu.final_status(
                    self.status, bool(lm['header']['equivalent'])),
                    tests_sha256=mu.tests_sha(tree))
                e.update(lm['extra'])
                es.append(e)
            write(es, None)
            return es
        mu.run_patches = fake_run
        mu.tests_sha = lambda _t: 'sha'
        mu.git = lambda *_a, **_k: types.SimpleNamespace(stdout='head\n')
        self.addCleanup(self.restore, saved)

    @staticmethod
    def restore(saved):
        mu.run_patches, mu.tests_sha, mu.git = saved

    def run_cmd(self, eq=None, **kw):
        args = types.SimpleNamespace(sample=False, names=[], resume=False,
                                     timeout=40, jobs=0, seed='19', count=20,
                                     results='{results}/{tree}',
                                     header_rebuild='full', mode='patch')
        args.__dict__.update(kw)
        self.ran = []
        with contextlib.redirect_stdout(io.StringIO()):
            got = gm.cmd_run(self.tree, self.ms, eq or {}, args)
        with open(os.path.join(self.tmp, '6.1',
                               'mutants-generated.json')) as f:
            return got, json.load(f)

    def test_run_resume_and_equivalents(self):
        got, rep = self.run_cmd()
        self.assertEqual(got, (4, 0, 0))
        self.assertEqual(self.ran, [m.name for m in self.ms])
        self.assertEqual(rep['total']['killed'], 4)
        self.assertTrue(os.path.isfile(os.path.join(
            self.tmp, '6.1', 'mutants-generated', 'patches',
            self.ms[0].name + '.patch')))
        self.assertEqual(len(os.listdir(os.path.join(
            self.tmp, '6.1', 'mutants-generated', 'patches'))), 4)
        # a chunk: only one mutant runs, the others are kept
        self.status = 'survived'
        got, rep = self.run_cmd(names=[self.ms[1].name])
        self.assertEqual(self.ran, [self.ms[1].name])
        self.assertEqual(got, (0, 1, 0))
        self.assertEqual([e['status'] for e in rep['mutants']],
                         ['killed', 'survived', 'killed', 'killed'])
        # --resume runs nothing; a declared equivalent is rescored
        eq = {self.ms[1].name: 'no test can see the difference here'}
        got, rep = self.run_cmd(eq=eq, resume=True)
        self.assertEqual(self.ran, [])
        self.assertEqual(got, (4, 0, 0))
        self.assertEqual(rep['mutants'][1]['status'], 'equivalent')
        self.assertEqual(rep['total']['score'], 100.0)
        # new tests: --resume runs the survivor again, not the kills
        mu.tests_sha = lambda _t: 'new tests'
        got, rep = self.run_cmd(resume=True)
        self.assertEqual(self.ran, [self.ms[1].name])
        self.assertEqual(rep['older_tests'], 3)
        # another tree head: nothing is current, all run again
        mu.git = lambda *_a, **_k: types.SimpleNamespace(stdout='new\n')
        self.run_cmd(eq=eq, resume=True)
        self.assertEqual(len(self.ran), 4)

    def test_the_sample_has_its_own_report(self):
        got, _rep = self.run_cmd()
        self.run_cmd(sample=True, count=2)
        self.assertEqual(len(self.ran), 2)
        with open(os.path.join(self.tmp, '6.1',
                               'mutants-generated-ci.json')) as f:
            rep = json.load(f)
        self.assertEqual(rep['total']['generated'], 2)
        self.assertEqual(rep['sample'], {'seed': '19', 'count': 2})
        self.assertTrue(os.path.isdir(os.path.join(
            self.tmp, '6.1', 'mutants-generated-ci', 'patches')))

    def test_no_match_is_an_error(self):
        with self.assertRaisesRegex(common.ToolError, 'no generated mutant'):
            self.run_cmd(names=['nothing*'])


@unittest.skipUnless(shutil.which('git'), 'git not installed')
class RunSchema(unittest.TestCase):
    """cmd_run --mode schema with the compiler and the suite runner faked:
    the baseline and each mutant run with their gup_mutant= and no build,
    kill rules as in patch mode, header mutants from their patches, the
    tree restored."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='genmut-rs-')
        self.addCleanup(shutil.rmtree, self.tmp)
        self.linux = os.path.join(self.tmp, 'linux')
        os.makedirs(os.path.join(self.linux, 'mm'))
        os.makedirs(os.path.join(self.linux, 'include'))
        Path(self.linux, 'mm', 'x.c').write_text(FILE)
        Path(self.linux, 'include', 'x.h').write_text(FILE)
        os.utime(os.path.join(self.linux, 'include', 'x.h'), (1000, 1000))
        fakes.git(self.linux, 'init', '-q')
        fakes.git(self.linux, 'add', '.')
        fakes.git(self.linux, '-c', 'user.name=t', '-c', 'user.email=t@t',
                  'commit', '-qm', 'x')
        self.addCleanup(setattr, sch, 'DEFINE_FILE', sch.DEFINE_FILE)
        sch.DEFINE_FILE = 'mm/x.c'
        Path(self.tmp, '.config').write_text('CONFIG_X=y\n')
        self.tree = types.SimpleNamespace(
            name='6.1', linux=self.linux, kunit_build=self.tmp,
            expand=lambda p: p.replace('{results}', self.tmp)
            .replace('{tree}', '6.1'))
        self.ms = mutants_of(FILE, 'f')[:5]
        hm = mutants_of(FILE, 'other', 'include/x.h')[0]
        self.ms.append(hm)
        self.calls = []
        # build/.lock is the real one: a run of the tools may hold it
        # (patch.dict: the tools step of make check runs this suite inside
        # check.py, whose own GPK_LOCK_HELD must survive it)
        env = mock.patch.dict(os.environ, GPK_LOCK_HELD='inherit')
        env.start()
        self.addCleanup(env.stop)
        saved = (mu.run_suite, mu.run_patches, mu.tests_sha,
                 sch.compile_objects, mu.header_dependents,
                 mu.snapshot_build, mu.restore_build)
        self.snaps = []

        def fake_suite(rdir, timeout, jobs, tree, extra=()):
            self.calls.append(list(extra))
            self.assertIn('int gup_mutant;',
                          Path(self.linux, 'mm', 'x.c').read_text())
            if self.targeted:
                h = os.path.join(self.linux, 'include', 'x.h')
                self.assertIn('switch (gup_mutant)', Path(h).read_text())
                self.assertEqual(os.stat(h).st_mtime, 1000)
            n = int(extra[-1].split('=')[1])
            status = 'failed' if n % 2 else 'passed'
            summary = {'suites': [{'name': 's', 'cases': [
                {'name': 'c', 'status': status}]}]}
            Path(rdir, 'summary.json').write_text(json.dumps(summary))
            return 0, ''

        def fake_patch_run(tree, loaded, results, timeout, jobs, runs, kept,
                           write, tool):
            es = list(kept)
            for lm in loaded:
                self.calls.append(['patch', lm['name']])
                e = entry(lm['name'], 'killed', tests_sha256='sha')
                e.update(lm['extra'])
                es.append(e)
            write(es, None)
            return es
        mu.run_suite = fake_suite
        mu.run_patches = fake_patch_run
        mu.tests_sha = lambda _t: 'sha'
        sch.compile_objects = lambda *_a: (0, '')
        mu.header_dependents = lambda *_a: (['mm/x.c'], ['other'])
        mu.snapshot_build = lambda b: self.snaps.append('snap') or 'copy'
        mu.restore_build = lambda b, c: self.snaps.append(c)
        self.targeted = False
        self.addCleanup(self.restore, saved)

    @staticmethod
    def restore(saved):
        (mu.run_suite, mu.run_patches, mu.tests_sha,
         sch.compile_objects, mu.header_dependents,
         mu.snapshot_build, mu.restore_build) = saved

    def args(self, **kw):
        args = types.SimpleNamespace(sample=False, names=[], resume=False,
                                     timeout=40, jobs=0, seed='19', count=20,
                                     results='{results}/{tree}',
                                     header_rebuild='full', mode='schema')
        args.__dict__.update(kw)
        return args

    def test_targeted_headers_join_the_schema(self):
        self.targeted = True
        with contextlib.redirect_stdout(io.StringIO()):
            got = gm.cmd_run(self.tree, self.ms, {},
                             self.args(header_rebuild='targeted'))
        self.assertEqual(self.calls[0], ['--kernel_args', 'gup_mutant=0'])
        self.assertEqual(len(self.calls), 7)
        self.assertEqual(self.calls[6][-1], 'gup_mutant=6')
        self.assertEqual(self.snaps, ['snap', 'copy'])
        self.assertEqual(got, (3, 3, 0))   # gup_mutant=6 passes: survived
        h = os.path.join(self.linux, 'include', 'x.h')
        self.assertEqual(Path(h).read_text(), FILE)
        self.assertEqual(os.stat(h).st_mtime, 1000)

    def test_headers_alone_define_the_variable_in_a_c_file(self):
        self.targeted = True
        texts = {}

        def fake_compile(tree, paths, jobs):
            for p in ('mm/x.c', 'include/x.h'):
                texts[p] = Path(self.linux, p).read_text()
            return 0, ''
        sch.compile_objects = fake_compile
        with contextlib.redirect_stdout(io.StringIO()):
            gm.cmd_run(self.tree, self.ms[5:], {},
                       self.args(header_rebuild='targeted'))
        self.assertIn('\nint gup_mutant;', texts['mm/x.c'])
        self.assertNotIn('switch', texts['mm/x.c'])
        self.assertIn('extern int gup_mutant;', texts['include/x.h'])
        self.assertNotIn('\nint gup_mutant;', texts['include/x.h'])
        self.assertEqual(Path(self.linux, 'mm', 'x.c').read_text(), FILE)

    def test_no_configured_build_is_one_error(self):
        os.unlink(os.path.join(self.tmp, '.config'))
        with self.assertRaisesRegex(common.ToolError, 'run make test'):
            with contextlib.redirect_stdout(io.StringIO()):
                gm.cmd_run(self.tree, self.ms[:2], {}, self.args())
        self.assertEqual(self.calls, [])

    def test_schema_run(self):
        args = self.args()
        with contextlib.redirect_stdout(io.StringIO()):
            got = gm.cmd_run(self.tree, self.ms, {}, args)
        self.assertEqual(self.calls[0], ['--kernel_args', 'gup_mutant=0'])
        self.assertEqual(self.calls[1:6],
                         [['--no-build', '--kernel_args', 'gup_mutant=%d' % n]
                          for n in range(1, 6)])
        self.assertEqual(self.calls[6], ['patch', self.ms[5].name])
        with open(os.path.join(self.tmp, '6.1',
                               'mutants-generated.json')) as f:
            rep = json.load(f)
        st = {e['name']: (e['status'], e['mode']) for e in rep['mutants']}
        self.assertEqual([st[m.name] for m in self.ms],
                         [('killed', 'schema'), ('survived', 'schema'),
                          ('killed', 'schema'), ('survived', 'schema'),
                          ('killed', 'schema'), ('killed', 'patch')])
        self.assertEqual(rep['modes'], {'patch': 1, 'schema': 5})
        self.assertEqual(got, (4, 2, 0))
        self.assertEqual(Path(self.linux, 'mm', 'x.c').read_text(), FILE)


class Agree(unittest.TestCase):
    """agree: the mutants that both reports ran on the same code, and
    those whose outcome differs (survived and equivalent are one)."""

    def test_agree(self):
        ms = mutants_of(FILE, 'f')[:4]
        tmp = tempfile.mkdtemp(prefix='genmut-agree-')
        self.addCleanup(shutil.rmtree, tmp)
        tree = types.SimpleNamespace(
            name='6.1', expand=lambda p: p.replace('{results}', tmp)
            .replace('{tree}', '6.1'))

        def write(d, statuses):
            os.makedirs(os.path.join(tmp, d), exist_ok=True)
            es = [dict(entry(m.name, st), diff_sha256=m.diff_sha(),
                       tree_head='h') for m, st in zip(ms, statuses)]
            Path(tmp, d, 'mutants-generated.json').write_text(
                json.dumps({'mutants': es}))
        write('a', ['killed', 'survived', 'equivalent', 'nocompile'])
        write('b', ['killed', 'equivalent', 'killed', 'killed'])
        args = types.SimpleNamespace(results='{results}/a',
                                     other='{results}/b')
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            differ = gm.cmd_agree(tree, ms, {}, args)
        self.assertEqual(differ, 1)
        self.assertIn('%s: equivalent (patch) / killed (patch)' % ms[2].name,
                      out.getvalue())
        self.assertIn('3 mutants in both reports: 2 with the same outcome, '
                      '1 differ', out.getvalue())


class Cli(unittest.TestCase):
    """The tool as a program, on a fake kunit/ and tree."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix='genmut-cli-'))
        self.addCleanup(shutil.rmtree, self.tmp)
        kunit = self.tmp / 'kunit'
        fakes.write_trees(kunit)
        (kunit / '6.1').mkdir()
        (kunit / '6.1' / 'pin-core').write_text('f mm/x.c\n')
        (kunit / 'mutants' / '6.1').mkdir(parents=True)
        linux = self.tmp / 'build' / '6.1' / 'linux' / 'mm'
        linux.mkdir(parents=True)
        (linux / 'x.c').write_text(FILE)
        self.linux = linux.parent
        for args in (['init', '-q'], ['add', '-A'],
                     ['commit', '-q', '-m', 'tree']):
            fakes.git(self.linux, *args)
        self.env = fakes.clean_env(GPK_KUNIT=kunit,
                                   GPK_BUILD=self.tmp / 'build',
                                   GPK_RESULTS=self.tmp / 'results')
        self.eq = kunit / 'mutants' / '6.1' / gm.EQUIVALENT_FILE

    def tool(self, *args):
        return fakes.run_tool([sys.executable, TOOLS / 'genmut.py'] +
                              list(args), self.env)

    def test_help(self):
        proc = self.tool('--help')
        self.assertEqual(proc.returncode, 0)
        for word in ('negate', 'getpin', 'Exclusions', 'VM_BUG_ON',
                     'SAMPLE_SEED', 'generated-equivalent', '--resume'):
            self.assertIn(word, proc.stdout)

    def test_list_sample_and_write(self):
        proc = self.tool('list', '--tree', '6.1')
        self.assertEqual(proc.returncode, 0, proc.stderr)
        names = [ln.split()[0] for ln in proc.stdout.splitlines()]
        self.assertEqual(names, [m.name for m in mutants_of(FILE, 'f')])
        proc = self.tool('sample', '--tree', '6.1', '--count', '3')
        self.assertEqual(len(proc.stdout.split()), 3)
        self.assertEqual(proc.stdout, self.tool('sample', '--tree', '6.1',
                                                '--count', '3').stdout)
        proc = self.tool('write', str(self.tmp / 'out'), '--tree', '6.1')
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(list((self.tmp / 'out' / '6.1').iterdir())),
                         len(names))

    def test_mutants_are_made_against_the_tree_not_a_change_in_it(self):
        """Another run's mutant or schema in the working copy changes
        nothing: the generator reads the tree's HEAD."""
        want = self.tool('list', '--tree', '6.1').stdout
        (self.linux / 'mm' / 'x.c').write_text(FILE.replace('if (', 'if (!'))
        got = self.tool('list', '--tree', '6.1')
        self.assertEqual((got.returncode, got.stdout), (0, want))

    def test_bad_input_is_one_line(self):
        self.eq.write_text('f+5-negate\n')
        for args, status, why in (
                (['list', '--tree', '6.1'], 1, 'has no reasoning'),
                (['list', '--tree', '9.9'], 2, 'unknown tree'),
                (['sample', '--count', '0'], 2, 'at least 1')):
            proc = self.tool(*args)
            self.assertEqual(proc.returncode, status, proc.stderr)
            self.assertEqual(len(proc.stderr.strip().splitlines()), 1,
                             proc.stderr)
            self.assertIn(why, proc.stderr)
        self.eq.write_text('f+99-del this line of f is gone now\n')
        proc = self.tool('stats', '--tree', '6.1')
        self.assertEqual(proc.returncode, 1)
        self.assertIn('stale', proc.stderr)

    def test_a_missing_tree_is_one_line(self):
        shutil.rmtree(self.tmp / 'build')
        proc = self.tool('list', '--tree', '6.1')
        self.assertEqual(proc.returncode, 1)
        self.assertRegex(proc.stderr, r'^genmut: cannot read .*x\.c')


class RealTrees(unittest.TestCase):
    """The generator on build/TREE/linux, when a tree is there and clean:
    the pin core's functions all give mutants, names are unique and
    well-formed, each tree's equivalents file is valid, and every patch
    applies (git apply --check, which writes nothing)."""

    def trees(self):
        out = []
        for tree in common.read_trees():
            if not os.path.isfile(os.path.join(tree.linux, 'mm', 'gup.c')):
                continue
            proc = subprocess.run(['git', '-C', tree.linux, 'status',
                                   '--porcelain', '--untracked-files=no'],
                                  text=True, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT)
            if proc.returncode == 0 and not proc.stdout.strip():
                out.append(tree)
        if not out:
            self.skipTest('no prepared, clean build/TREE/linux')
        return out

    def test_generate(self):
        for tree in self.trees():
            ms = gen.generate(tree)
            names = [m.name for m in ms]
            self.assertEqual(len(names), len(set(names)))
            self.assertGreaterEqual(len(ms), 200, tree.name)
            funcs = set(m.function for m in ms)
            for func, path in common.read_pin_core(tree):
                if func in funcs:
                    continue
                # Only a wrapper that returns another call has no site.
                with open(os.path.join(tree.linux, path)) as f:
                    a, b = _cscan.source_extents(f.read(), func)[0]
                self.assertLessEqual(b - a, 12, '%s: %s has no mutant'
                                     % (tree.name, func))
            for op in ('negate', 'del', 'ret', 'getpin', 'bias', 'inc'):
                self.assertIn(op, set(m.op for m in ms), tree.name)
            self.assert_mutants_parse(tree, ms)
            gm.read_equivalents(tree, names)
            self.assertEqual(len(gm.sample(ms, {}, gm.SAMPLE_SEED,
                                           gm.SAMPLE_COUNT)),
                             gm.SAMPLE_COUNT)

    def assert_mutants_parse(self, tree, ms):
        """Each mutant changes the code, and its function still parses
        (balanced, statements end): a cheap guard against a generator
        bug, not a compiler."""
        texts = {}
        for m in ms:
            if m.file not in texts:
                with open(os.path.join(tree.linux, m.file)) as f:
                    texts[m.file] = f.read().split('\n')
            lines = texts[m.file]
            self.assertNotEqual(m.old, m.new, m.name)
            new = '\n'.join(lines[:m.line - 1] + m.new +
                            lines[m.line - 1 + len(m.old):])
            first, last = _cscan.source_extents(new, m.function)[0]
            src = _cscan.Source(new)
            toks = _cscan.tokenize(new, src.starts[first - 1],
                                   src.starts[last])
            lb = next(i for i, t in enumerate(toks) if t.text == '{')
            gen.Body(toks[lb:])

    @unittest.skipUnless(shutil.which('git'), 'git not installed')
    def test_every_patch_applies(self):
        for tree in self.trees():
            ms = gen.generate(tree)
            with tempfile.TemporaryDirectory() as tmp:
                paths = gm.write_patches(ms, {}, tmp)
                bad = []
                for p in paths:
                    proc = subprocess.run(
                        ['git', '-C', tree.linux, 'apply', '--check', p],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    if proc.returncode:
                        bad.append(os.path.basename(p))
            self.assertEqual(bad, [], tree.name)


if __name__ == '__main__':
    unittest.main()
