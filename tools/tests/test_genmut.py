"""Tests of tools/genmut.py: the tokenizer, every operator on small C
snippets, the names and their stability, the patches, the equivalents
file, the CI sample, the reports and resume, and the generator on the real
trees when build/TREE/linux exists. No kernel is built."""

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

from tests import fakes  # noqa: E402


gm = fakes.load_tool('genmut')
mu = gm.mutate          # the module genmut runs with, whoever loaded it
common = sys.modules['_common']

FILE = '''\
/* a file */
#include <linux/mm.h>

static int other(int a)
{
	return a + 1;
}

bool f(struct page *page, int refs, unsigned int flags)
{
	struct folio *folio = page_folio(page);
	int i;

	if (flags & FOLL_GET)
		return true;
	for (i = 0; i < refs; i++)
		folio_ref_add(folio, GUP_PIN_COUNTING_BIAS);
	return false;
}
'''


def mutants_of(text, func, path='mm/x.c'):
    """The mutants of func in text."""
    src = gm.Source(text)
    first, last = common.source_extents(text, func)[0]
    return gm.function_mutants(src, func, path, first, last)


def body(code, sig='int f(int a, int b, unsigned int flags)'):
    """A file with one function whose body is code (tab-indented lines)."""
    lines = ''.join('\t%s\n' % ln if ln else '\n'
                    for ln in code.split('\n'))
    return '%s\n{\n%s}\n' % (sig, lines)


def changes(text, func='f'):
    """{name: 'new lines joined by |'} of the mutants of func."""
    return {m.name: '|'.join(ln.strip() for ln in m.new)
            for m in mutants_of(text, func)}


class Tokenizer(unittest.TestCase):
    def texts(self, text):
        return [t.text for t in gm.tokenize(text)]

    def test_comments_strings_and_preprocessor_give_no_code(self):
        text = ('#define X(a) \\\n\t((a) < 1)\n'
                'a /* b < c */ -> d // e == f\n'
                '  #if A > 1\n'
                'g("h < i", \'<\') <= 0x1fUL;\n')
        self.assertEqual(self.texts(text),
                         ['a', '->', 'd', 'g', '(', '"h < i"', ',', "'<'",
                          ')', '<=', '0x1fUL', ';'])

    def test_comment_on_a_directive_line(self):
        self.assertEqual(self.texts('#endif /* X\n  y */\nz\n'), ['z'])

    def test_unterminated_comment_is_an_error(self):
        with self.assertRaisesRegex(common.ToolError, 'unterminated'):
            gm.tokenize('a /* b')


class Operators(unittest.TestCase):
    def test_negate(self):
        got = changes(body('if (a)\n\treturn 1;\n'
                           'if (!g(a))\n\treturn 2;\n'
                           'if (a && b)\n\treturn 3;\n'
                           'while (a)\n\tb--;\n'
                           'do {\n\ta++;\n} while (b);\n'
                           'return 0;'))
        self.assertEqual(got['f+2-negate'], 'if (!a)')
        self.assertEqual(got['f+4-negate'], 'if (g(a))')
        self.assertEqual(got['f+6-negate'], 'if (!(a && b))')
        self.assertEqual(got['f+8-negate'], 'while (!a)')
        self.assertEqual(got['f+12-negate'], '} while (!b);')

    def test_negate_a_condition_over_two_lines(self):
        got = changes(body('if (a &&\n    b)\n\treturn 1;\nreturn 0;'))
        self.assertEqual(got['f+2-negate'], 'if (!(a &&|b))')

    def test_relational(self):
        got = changes(body('return a < b || a <= b || a > b || '
                           'a >= b || a == b || a != b;'))
        for op, new in (('lt2le', 'a <= b ||'), ('le2lt', '|| a < b ||'),
                        ('gt2ge', '|| a >= b ||'), ('ge2gt', '|| a > b ||'),
                        ('eq2ne', '|| a != b ||'), ('ne2eq', '|| a == b;')):
            self.assertIn(new, got['f+2-' + op], op)

    def test_logical(self):
        got = changes(body('return a && b || c;'))
        self.assertEqual(got['f+2-and2or'], 'return a || b || c;')
        self.assertEqual(got['f+2-or2and'], 'return a && b && c;')

    def test_arithmetic_binary_only(self):
        got = changes(body('a += b - c;\nb++;\nreturn -EINVAL;'))
        self.assertEqual(got['f+2-add2sub'], 'a -= b - c;')
        self.assertEqual(got['f+2-sub2add'], 'a += b + c;')
        self.assertEqual(got['f+3-add2sub'], 'b--;')
        self.assertNotIn('f+4-sub2add', got)     # unary minus

    def test_constants(self):
        got = changes(body('a = 0x10UL;\nb = 0;\nreturn 7;'))
        self.assertEqual(got['f+2-inc'], 'a = 0x11UL;')
        self.assertEqual(got['f+2-dec'], 'a = 0xfUL;')
        self.assertEqual(got['f+3-dec'], 'b = (-1);')
        self.assertEqual(got['f+4-inc'], 'return 8;')

    def test_truth_value_constants_flip_only(self):
        got = changes(body('WARN_ON_ONCE(1);\nif (0)\n\ta = 1;\nreturn 0;'))
        self.assertEqual(got['f+2-dec'], 'WARN_ON_ONCE(0);')
        self.assertNotIn('f+2-inc', got)
        self.assertEqual(got['f+3-inc'], 'if (1)')
        self.assertNotIn('f+3-dec', got)

    def test_bias(self):
        got = changes(body('a *= GUP_PIN_COUNTING_BIAS;\nreturn a;'))
        self.assertEqual(got['f+2-bias'],
                         'a *= (GUP_PIN_COUNTING_BIAS - 1);')

    def test_getpin(self):
        got = changes(body('if (flags & FOLL_GET)\n\tg(FOLL_PIN);\n'
                           'return 0;'))
        self.assertEqual(got['f+2-getpin'], 'if (flags & FOLL_PIN)')
        self.assertEqual(got['f+3-getpin'], 'g(FOLL_GET);')

    def test_delete_calls_and_assignments(self):
        text = body('struct folio *folio = g(a);\nLIST_HEAD(list);\n'
                    'int c;\n\nc = a;\nput(folio,\n    b);\nif (a)\n'
                    '\tputback(folio);\nelse {\n\tlist_add(&c, &list);\n}\n'
                    'return c;')
        got = changes(text)
        names = sorted(n for n in got if n.endswith('-del'))
        self.assertEqual(names, ['f+10-del', 'f+12-del', 'f+6-del',
                                 'f+7-del'])
        self.assertEqual(got['f+6-del'], '')          # the line goes
        self.assertEqual(got['f+7-del'], '')          # both lines go
        self.assertEqual(got['f+10-del'], ';')        # an unbraced body
        m = next(m for m in mutants_of(text, 'f') if m.name == 'f+7-del')
        self.assertEqual(m.old, ['\tput(folio,', '\t    b);'])
        self.assertEqual(m.new, [])

    def test_assertions_are_left_alone(self):
        got = changes(body('VM_BUG_ON(a < 1);\nBUILD_BUG_ON(b == 2);\n'
                           'VM_WARN_ON_ONCE_FOLIO(!a, b);\n'
                           'lockdep_assert_held(&a);\nreturn 0;'))
        self.assertEqual([n for n in got if n.split('+')[1][0] in '2345'],
                         [])

    def test_early_returns(self):
        bool_f = body('if (a)\n\treturn true;\nif (b)\n\treturn g(a);\n'
                      'if (c)\n\treturn !g(b);\nreturn false;',
                      sig='bool f(int a, int b, int c)')
        got = changes(bool_f)
        self.assertEqual(got['f+3-ret'], 'return false;')
        self.assertEqual(got['f+5-ret'], 'return !g(a);')
        self.assertEqual(got['f+7-ret'], 'return g(b);')
        self.assertNotIn('f+8-ret', got)              # the last statement
        ptr_f = body('struct folio *folio = g(a);\n\nif (!folio)\n'
                     '\treturn NULL;\nif (b)\n\treturn h(a);\n'
                     'return folio;', sig='struct folio *f(int a, int b)')
        got = changes(ptr_f)
        self.assertEqual(got['f+5-ret'], 'return folio;')
        self.assertEqual(got['f+7-ret'], 'return NULL;')
        int_f = body('if (a)\n\treturn 0;\nif (b)\n\treturn -EBUSY;\n'
                     'return a + b;', sig='static long f(int a, int b)')
        got = changes(int_f)
        self.assertEqual(got['f+3-ret'], 'return -EBUSY;')
        self.assertEqual(got['f+5-ret'], 'return 0;')
        void_f = body('if (a) {\n\tg(a);\n\treturn;\n}\nif (b)\n'
                      '\treturn;\ng(b);', sig='void f(int a, int b)')
        got = changes(void_f)
        self.assertEqual(got['f+4-ret'], '')
        self.assertEqual(got['f+7-ret'], ';')

    def test_comments_strings_and_directives_in_a_body(self):
        got = changes(body('/* a < b */\npr_info("a == b");\n'
                           '#if X > 1\na = b; // a + b\n#endif\nreturn a;'))
        self.assertEqual(sorted(got), ['f+3-del', 'f+5-del'])

    def test_signature_and_second_definition_are_left_alone(self):
        text = ('#ifdef A\nint f(int a[2], int b)\n{\n\treturn a[0] + b;\n}'
                '\n#else\nint f(int a[2], int b)\n{\n\treturn 1 + 1;\n}\n'
                '#endif\n')
        self.assertEqual(sorted(changes(text)),
                         ['f+2-add2sub', 'f+2-dec', 'f+2-inc'])

    def test_return_type_on_the_line_before(self):
        text = ('static struct folio *\nf(int a)\n{\n\tif (a)\n'
                '\t\treturn g(a);\n\treturn NULL;\n}\n')
        self.assertEqual(common.source_extents(text, 'f'), [(2, 7)])
        self.assertEqual(changes(text)['f+3-ret'], 'return NULL;')

    def test_several_sites_on_one_line(self):
        got = changes(body('return a == 1 || b == 2;'))
        self.assertIn('f+2-eq2ne-1', got)
        self.assertIn('f+2-eq2ne-2', got)
        self.assertNotIn('f+2-eq2ne', got)
        self.assertEqual(got['f+2-eq2ne-2'], 'return a == 1 || b != 2;')


class Names(unittest.TestCase):
    def names(self, text):
        return [m.name for m in mutants_of(text, 'f')]

    def test_format_and_order(self):
        names = self.names(FILE)
        for n in names:
            self.assertRegex(n, gm.NAME_RE)
        self.assertEqual(names, sorted(set(names), key=names.index))
        self.assertEqual(names[:3], ['f+5-negate', 'f+5-getpin',
                                     'f+6-ret'])

    def test_an_edit_elsewhere_renames_nothing(self):
        before = self.names(FILE)
        edited = ('/* a new\n * comment */\n' +
                  FILE.replace('return a + 1;', 'a++;\n\treturn a - 2;'))
        self.assertEqual(self.names(edited), before)
        gm_lines = [m.line for m in mutants_of(edited, 'f')]
        self.assertEqual(gm_lines[0] - 3,
                         mutants_of(FILE, 'f')[0].line)

    def test_generation_is_deterministic(self):
        a = [(m.name, m.hunk) for m in mutants_of(FILE, 'f')]
        b = [(m.name, m.hunk) for m in mutants_of(FILE, 'f')]
        self.assertEqual(a, b)


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


@unittest.skipUnless(shutil.which('git'), 'git not installed')
class HeaderRebuild(unittest.TestCase):
    """--header-rebuild targeted: which objects a header mutant can
    change, and mutate.run_one() rebuilding only those."""

    HEADER = ('static inline bool f(int a)\n{\n\treturn a > 0;\n}\n\n'
              'static __always_inline bool g(int a)\n{\n\treturn f(a);\n}'
              '\n\n#define H(a) \\\n\tg(a)\n\n'
              'static inline int unrelated(void)\n{\n\treturn 0;\n}\n')

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix='genmut-hdr-'))
        self.addCleanup(shutil.rmtree, self.tmp)
        self.linux = self.tmp / 'linux'
        files = {'include/linux/x.h': self.HEADER,
                 'mm/a.c': 'int a(void) { return H(1); }\n',
                 'mm/b.c': 'int b(void) { return unrelated(); }\n',
                 'mm/c.c': 'int c(void) { return f(1); }\n',
                 'mm/d.c': 'int d(void) { return g(1); }\n'}
        for rel, text in files.items():
            (self.linux / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.linux / rel).write_text(text)
        fakes.git(self.linux, 'init', '-q')
        fakes.git(self.linux, 'add', '-A')
        fakes.git(self.linux, 'commit', '-q', '-m', 'base')
        self.build = self.tmp / 'build'
        (self.build / 'mm').mkdir(parents=True)
        for obj in ('a.o', 'b.o', 'd.o'):        # c.c is not built
            (self.build / 'mm' / obj).write_text('object')
        self.tree = types.SimpleNamespace(name='0.0', linux=str(self.linux),
                                          kunit_build=str(self.build))

    def test_dependents_follow_inlines_and_macros(self):
        objs, closure = gm.header_dependents(self.tree, 'f')
        self.assertEqual(closure, ['H', 'f', 'g'])
        self.assertEqual(objs, ['mm/a.c', 'mm/d.c'])

    def test_run_one_rebuilds_only_the_dependents(self):
        old = os.stat(self.linux / 'mm' / 'a.c').st_mtime_ns - 10 ** 9
        for rel in ('include/linux/x.h', 'mm/a.c', 'mm/b.c'):
            os.utime(self.linux / rel, ns=(old, old))
        ms = mutants_of(self.HEADER, 'f', 'include/linux/x.h')
        path = gm.write_patches(ms[:1], {}, str(self.tmp / 'p'))[0]
        m = mu.load_mutant(path)
        m['touch'] = ['mm/a.c']
        seen = {}

        def fake_run_suite(rdir, timeout, jobs, tree):
            for rel in ('include/linux/x.h', 'mm/a.c', 'mm/b.c'):
                seen[rel] = os.stat(self.linux / rel).st_mtime_ns
            seen['text'] = (self.linux / 'include/linux/x.h').read_text()
            raise RuntimeError('stop here')

        saved = (mu.run_suite, mu.tests_sha)
        mu.run_suite, mu.tests_sha = fake_run_suite, lambda _t: 'sha'
        try:
            with self.assertRaises(RuntimeError):
                mu.run_one(m, self.tree, str(self.tmp), 60, 0)
        finally:
            mu.run_suite, mu.tests_sha = saved
        self.assertNotEqual(seen['text'], self.HEADER)   # the mutant ran
        self.assertEqual(seen['include/linux/x.h'], old)  # kbuild: unchanged
        self.assertGreater(seen['mm/a.c'], old)           # rebuilt
        self.assertEqual(seen['mm/b.c'], old)
        for rel in ('include/linux/x.h', 'mm/a.c', 'mm/b.c'):
            self.assertEqual(os.stat(self.linux / rel).st_mtime_ns, old)
        self.assertEqual(mu.tree_changes(str(self.linux)), [])
        self.assertEqual((self.build / 'mm' / 'a.o').read_text(), 'object')


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
        return [gm.Mutant(name='f+%d-del' % i, function='f',
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
            more = ms + [gm.Mutant(name='g+%d-inc' % extra, function='g',
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
        self.ms = [gm.Mutant(name='f+%d-del' % i, function='f' if i < 6
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
        saved = (mu.run_mutants, mu.tests_sha, mu.git)

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
        mu.run_mutants = fake_run
        mu.tests_sha = lambda _t: 'sha'
        mu.git = lambda *_a, **_k: types.SimpleNamespace(stdout='head\n')
        self.addCleanup(self.restore, saved)

    @staticmethod
    def restore(saved):
        mu.run_mutants, mu.tests_sha, mu.git = saved

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


SCHEMA_PROGRAM = """\
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>


struct page { int refs; int flags; };

static int grabs;

static inline struct page *
get(struct page *page, int refs)
{
	if (!page || refs < 1)
		return NULL;
	page->refs += refs;
	return page;
}

void put(struct page *page, int refs)
{
	if (page->flags & 2)
		return;
	page->refs -= refs;
	grabs++;
}

bool pinned(struct page *page, int bias)
{
	if (page->refs >= bias && page->flags != 4)
		return true;
	return page->refs + 1 > 2 * bias;
}

int main(int argc, char **argv)
{
	static const int flags[] = { 0, 2, 4 };
	int f, r;

	gup_mutant = argc > 1 ? atoi(argv[1]) : 0;
	for (f = 0; f < 3; f++) {
		for (r = -1; r < 4; r++) {
			struct page p = { 3, flags[f] };
			struct page *q = get(r < 0 ? NULL : &p, r);

			if (q)
				put(q, r);
			printf("%d %d %d %d %d\\n", f, r, !!q, p.refs,
			       pinned(&p, 3));
		}
	}
	printf("%d\\n", grabs);
	return 0;
}
"""


@unittest.skipUnless(shutil.which('gcc'), 'gcc not installed')
class Schemata(unittest.TestCase):
    """tools/_schemata.py on a small C program, compiled and run: with
    gup_mutant=N the schema behaves exactly as mutant N's own patch."""

    FUNCS = ('get', 'put', 'pinned')

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='genmut-schema-')
        self.addCleanup(shutil.rmtree, self.tmp)
        inc = os.path.join(self.tmp, 'linux')
        os.makedirs(inc)
        Path(inc, 'moduleparam.h').write_text(
            '#define core_param(name, var, type, perm)\n')

    def output(self, text, name, arg=None):
        c = os.path.join(self.tmp, name + '.c')
        exe = os.path.join(self.tmp, name)
        Path(c).write_text(text)
        subprocess.run(['gcc', '-w', '-I', self.tmp, '-o', exe, c],
                       check=True)
        proc = subprocess.run([exe] + ([str(arg)] if arg is not None
                                       else []),
                              stdout=subprocess.PIPE, text=True,
                              timeout=10)
        return proc.returncode, proc.stdout

    def schema_of(self, text, ms):
        ids = {m.name: i for i, m in enumerate(ms, 1)}
        specs = []
        for func in self.FUNCS:
            first, last = common.source_extents(text, func)[0]
            specs.append((func, first, last,
                          [(ids[m.name], m.line, m.line + len(m.old) - 1,
                            m.new) for m in ms if m.function == func]))
        return gm._schemata.file_schema(text, specs, True), ids

    def test_each_mutant_runs_as_its_own_patch(self):
        text = SCHEMA_PROGRAM.replace('static int grabs;',
                                      'static int grabs;\nint gup_mutant;')
        ms = []
        for func in self.FUNCS:
            ms += mutants_of(text, func)
        self.assertGreater(len(ms), 20)
        (schema, spans), ids = self.schema_of(text, ms)
        plain = self.output(text, 'plain')
        self.assertEqual(self.output(schema, 'schema', 0), plain)
        lines = text.split('\n')
        differ = 0
        for m in ms:
            mutated = lines[:m.line - 1] + m.new + \
                lines[m.line - 1 + len(m.old):]
            want = self.output('\n'.join(mutated), 'patch')
            got = self.output(schema, 'schema', ids[m.name])
            self.assertEqual(got, want, m.name)
            differ += want != plain
        self.assertGreater(differ, len(ms) // 2)
        # every copy and dispatcher is a span; a line maps back to it
        for name, ident in ids.items():
            a = next(s for s in spans if s[3] == ident)
            self.assertEqual(gm._schemata.span_of(spans, a[0] + 1),
                             (a[2], ident))
        self.assertIsNone(gm._schemata.span_of(spans, 1))

    def test_signatures(self):
        names = gm._schemata._params
        self.assertEqual(names('int f(void)', 'f'), [])
        self.assertEqual(names('int f(struct page **pages, unsigned long '
                               'n, void (*fn)(int), int a[])', 'f'),
                         ['pages', 'n', 'fn', 'a'])
        with self.assertRaises(gm._schemata.SchemaError):
            names('int f(const char *fmt, ...)', 'f')
        self.assertTrue(gm._schemata._returns_void('static void\nf(int a)',
                                                   'f'))
        self.assertFalse(gm._schemata._returns_void('void *f(int a)', 'f'))
        with self.assertRaisesRegex(gm._schemata.SchemaError, 'brace'):
            gm._schemata.function_schema(['int f(int a) {', '}'], 'f', 1,
                                         2, [])

    def test_error_lines(self):
        out = ('../linux/mm/gup.c:12:5: error: x\n'
               '/w/linux/mm/gup.c:40:1: warning: y\n'
               'mm/gup.c:7:3: note: in expansion of macro \u2018Z\u2019\n'
               'mm/gup.c.orig:9:1: error: z\n'
               'xmm/gup.c:8:1: error: z\n')
        self.assertEqual(gm._schemata.error_lines(out, 'mm/gup.c'), [7, 12])


class BuildSchema(unittest.TestCase):
    """build_schema(): the compiler's errors drop a mutant only if its own
    patch does not compile; one that compiles alone runs from its patch;
    the tree is left with the schema of the rest."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='genmut-build-')
        self.addCleanup(shutil.rmtree, self.tmp)
        os.makedirs(os.path.join(self.tmp, 'mm'))
        Path(self.tmp, 'mm', 'x.c').write_text(FILE)
        for args in (['init', '-q'], ['add', '-A'],
                     ['commit', '-q', '-m', 'tree']):
            fakes.git(self.tmp, *args)
        self.tree = types.SimpleNamespace(name='6.1', linux=self.tmp,
                                          kunit_build=self.tmp)
        self.ms = mutants_of(FILE, 'f')
        self.ids = {m.name: i for i, m in enumerate(self.ms, 1)}
        self.addCleanup(setattr, gm, 'compile_objects', gm.compile_objects)
        self.addCleanup(setattr, gm, 'DEFINE_FILE', gm.DEFINE_FILE)
        gm.DEFINE_FILE = 'mm/x.c'


    def test_errors_drop_only_what_does_not_compile_alone(self):
        broken = next(m for m in self.ms if m.op == 'del')   # stays broken
        odd = next(m for m in self.ms if m.op == 'negate')   # schema only
        calls = []

        def fake_compile(tree, paths, jobs):
            text = Path(self.tmp, 'mm', 'x.c').read_text()
            calls.append(text)
            alone = 'switch (gup_mutant)' not in text
            if alone:
                bad = '\n'.join(broken.new) in text and \
                    broken.new != [] or \
                    (broken.new == [] and '\n'.join(broken.old) not in text)
                return (1, 'mm/x.c:3:1: error: e\n') if bad else (0, '')
            lines = text.split('\n')
            errs = []
            for m in (broken, odd):
                tag = 'f%s%d(' % (gm._schemata.SUFFIX, self.ids[m.name])
                if any(tag in ln for ln in lines):
                    n = next(i for i, ln in enumerate(lines, 1)
                             if tag in ln and ln.startswith('static'))
                    errs.append('mm/x.c:%d:2: error: e' % (n + 2))
            return (1, '\n'.join(errs)) if errs else (0, '')
        gm.compile_objects = fake_compile
        active, nocompile, fallback = gm.build_schema(
            self.tree, self.ms, self.ids, 2)
        self.assertEqual(list(nocompile), [broken.name])
        self.assertEqual(list(fallback), [odd.name])
        self.assertEqual(len(active), len(self.ms) - 2)
        text = Path(self.tmp, 'mm', 'x.c').read_text()
        self.assertIn('switch (gup_mutant)', text)
        self.assertNotIn('f%s%d(' % (gm._schemata.SUFFIX,
                                     self.ids[odd.name]), text)

    def test_an_error_outside_the_copies_is_a_tool_error(self):
        gm.compile_objects = lambda *_a: (1, 'mm/x.c:1:1: error: e\n')
        with self.assertRaisesRegex(common.ToolError, 'outside its copies'):
            gm.build_schema(self.tree, self.ms, self.ids, 2)


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
        self.addCleanup(setattr, gm, 'DEFINE_FILE', gm.DEFINE_FILE)
        gm.DEFINE_FILE = 'mm/x.c'
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
        saved = (mu.run_suite, mu.run_mutants, mu.tests_sha,
                 gm.compile_objects, gm.header_dependents,
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
        mu.run_mutants = fake_patch_run
        mu.tests_sha = lambda _t: 'sha'
        gm.compile_objects = lambda *_a: (0, '')
        gm.header_dependents = lambda *_a: (['mm/x.c'], ['other'])
        mu.snapshot_build = lambda b: self.snaps.append('snap') or 'copy'
        mu.restore_build = lambda b, c: self.snaps.append(c)
        self.targeted = False
        self.addCleanup(self.restore, saved)

    @staticmethod
    def restore(saved):
        (mu.run_suite, mu.run_mutants, mu.tests_sha,
         gm.compile_objects, gm.header_dependents,
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
        gm.compile_objects = fake_compile
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
        args = types.SimpleNamespace(results='{results}/a', other='{results}/b')
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
            ms = gm.generate(tree)
            names = [m.name for m in ms]
            self.assertEqual(len(names), len(set(names)))
            self.assertGreaterEqual(len(ms), 200, tree.name)
            funcs = set(m.function for m in ms)
            for func, path in common.read_pin_core(tree):
                if func in funcs:
                    continue
                # Only a wrapper that returns another call has no site.
                with open(os.path.join(tree.linux, path)) as f:
                    a, b = common.source_extents(f.read(), func)[0]
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
            first, last = common.source_extents(new, m.function)[0]
            src = gm.Source(new)
            toks = gm.tokenize(new, src.starts[first - 1], src.starts[last])
            lb = next(i for i, t in enumerate(toks) if t.text == '{')
            gm.Body(toks[lb:])

    @unittest.skipUnless(shutil.which('git'), 'git not installed')
    def test_every_patch_applies(self):
        for tree in self.trees():
            ms = gm.generate(tree)
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
