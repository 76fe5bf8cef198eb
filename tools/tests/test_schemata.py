"""Tests of tools/_schemata.py: a schema compiled and run (with gup_mutant=N
it behaves as mutant N's own patch), the signatures it copies, the
compiler's errors, build_schema() dropping what does not compile, a
catalogue entry as a schema mutant, and run_mutants(), the entry point
of both front ends, in each mode."""

import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import types
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOOLS = HERE.parent
sys.path.insert(0, str(TOOLS))

import _common as common  # noqa: E402
import _mutation as mu  # noqa: E402
import _schemata as sch  # noqa: E402
from tests import fakes  # noqa: E402
from tests.test_generator import FILE, mutants_of  # noqa: E402

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
            first, last = sch.source_extents(text, func)[0]
            specs.append((func, first, last,
                          [(ids[m.name], m.line, m.line + len(m.old) - 1,
                            m.new) for m in ms if m.function == func]))
        return sch.file_schema(text, specs, True), ids

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
            self.assertEqual(sch.span_of(spans, a[0] + 1),
                             (a[2], ident))
        self.assertIsNone(sch.span_of(spans, 1))

    def test_signatures(self):
        names = sch._params
        self.assertEqual(names('int f(void)', 'f'), [])
        self.assertEqual(names('int f(struct page **pages, unsigned long '
                               'n, void (*fn)(int), int a[])', 'f'),
                         ['pages', 'n', 'fn', 'a'])
        with self.assertRaises(sch.SchemaError):
            names('int f(const char *fmt, ...)', 'f')
        with self.assertRaisesRegex(sch.SchemaError, 'brace'):
            sch.function_schema(['int f(int a) {', '}'], 'f', 1,
                                         2, [])

    def test_error_lines(self):
        out = ('../linux/mm/gup.c:12:5: error: x\n'
               '/w/linux/mm/gup.c:40:1: warning: y\n'
               'mm/gup.c:7:3: note: in expansion of macro \u2018Z\u2019\n'
               'mm/gup.c.orig:9:1: error: z\n'
               'xmm/gup.c:8:1: error: z\n')
        self.assertEqual(sch.error_lines(out, 'mm/gup.c'), [7, 12])


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
        self.addCleanup(setattr, sch, 'compile_objects', sch.compile_objects)
        self.addCleanup(setattr, sch, 'DEFINE_FILE', sch.DEFINE_FILE)
        sch.DEFINE_FILE = 'mm/x.c'


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
                tag = 'f%s%d(' % (sch.SUFFIX, self.ids[m.name])
                if any(tag in ln for ln in lines):
                    n = next(i for i, ln in enumerate(lines, 1)
                             if tag in ln and ln.startswith('static'))
                    errs.append('mm/x.c:%d:2: error: e' % (n + 2))
            return (1, '\n'.join(errs)) if errs else (0, '')
        sch.compile_objects = fake_compile
        with contextlib.redirect_stdout(io.StringIO()):
            active, nocompile, fallback = sch.build_schema(
                self.tree, self.ms, self.ids, 2, 'genmut')
        self.assertEqual(list(nocompile), [broken.name])
        self.assertEqual(list(fallback), [odd.name])
        self.assertEqual(len(active), len(self.ms) - 2)
        text = Path(self.tmp, 'mm', 'x.c').read_text()
        self.assertIn('switch (gup_mutant)', text)
        self.assertNotIn('f%s%d(' % (sch.SUFFIX,
                                     self.ids[odd.name]), text)

    def test_an_error_outside_the_copies_is_a_tool_error(self):
        sch.compile_objects = lambda *_a: (1, 'mm/x.c:1:1: error: e\n')
        with self.assertRaisesRegex(common.ToolError, 'outside its copies'):
            sch.build_schema(self.tree, self.ms, self.ids, 2, 'genmut')


SCHEMA_SRC = """#include <x.h>

static int
add(int a, int b)
{
\tint c = a + b;

\treturn c;
}

int twice(int a)
{
\treturn add(a, a);
}
"""


def schema_entry(hunks, path='mm/f.c'):
    return mu.make_mutant('001-x', 'cat', 'Subject: s\n\n--- a/%s\n'
                          '+++ b/%s\n%s' % (path, path, hunks), 'x')


class SchemaMutant(unittest.TestCase):
    """A catalogue entry as a mutant of a schema: the lines it replaces,
    by what, in which function; or why it runs from its patch."""

    def conv(self, hunks, path='mm/f.c', src=SCHEMA_SRC):
        return sch.schema_mutant(schema_entry(hunks, path), lambda p: src)

    def test_a_change_in_a_function_is_its_lines_and_function(self):
        sm, why = self.conv('@@ -5,4 +5,4 @@\n {\n-\tint c = a + b;\n'
                            '+\tint c = a - b;\n \n \treturn c;\n')
        self.assertEqual(why, '')
        self.assertEqual((sm.function, sm.file, sm.line, sm.old, sm.new,
                          sm.header),
                         ('add', 'mm/f.c', 6, ['\tint c = a + b;'],
                          ['\tint c = a - b;'], False))

    def test_a_hunk_that_moved_is_found_where_git_apply_finds_it(self):
        sm, _why = self.conv('@@ -1,3 +1,2 @@\n {\n-\treturn add(a, a);'
                             '\n }\n')
        self.assertEqual((sm.function, sm.line, sm.old, sm.new),
                         ('twice', 13, ['\treturn add(a, a);'], []))

    def test_an_insertion_lies_between_two_lines_of_its_function(self):
        sm, _why = self.conv('@@ -7,2 +7,3 @@\n \n+\tc++;\n \treturn c;\n')
        self.assertEqual((sm.function, sm.line, sm.old, sm.new),
                         ('add', 8, [], ['\tc++;']))

    def test_what_a_schema_cannot_hold_runs_from_its_patch(self):
        two = ('@@ -6 +6 @@\n-\tint c = a + b;\n+\tint c = 0;\n'
               '@@ -13 +13 @@\n-\treturn add(a, a);\n+\treturn 0;\n')
        for hunks, path, why in (
                (two, 'mm/f.c', 'its diff has 2 hunks'),
                ('@@ -1 +1 @@\n-#include <x.h>\n+#include <y.h>\n',
                 'mm/f.c', 'its change is not inside one function'),
                ('@@ -9,3 +9,2 @@\n }\n-\n int twice(int a)\n', 'mm/f.c',
                 'its change is not inside one function'),
                ('@@ -6 +6 @@\n-\tint c = a + b;\n+\tint c = 0;\n',
                 'mm/f.h', 'it does not change exactly one .c file'),
                ('@@ -3,2 +3,3 @@\n static int\n+/* x */\n add(int a, int '
                 'b)\n', 'mm/f.c', 'its change is not inside one function'),
                ('@@ -6 +6 @@\n-\tint c = a * b;\n+\tint c = 0;\n',
                 'mm/f.c', 'its hunk does not match mm/f.c as the tree '
                 'has it')):
            sm, got = self.conv(hunks, path)
            self.assertIsNone(sm, hunks)
            self.assertEqual(got, why)

    def test_a_hunk_as_near_to_two_places_matches_neither(self):
        sm, why = self.conv('@@ -3 +3 @@\n-x\n+y\n', src='a\nx\nb\nx\n')
        self.assertIsNone(sm)
        self.assertIn('does not match', why)


class RunMutants(unittest.TestCase):
    """run_mutants(), the entry point of both front ends: in schema mode
    the mutants that fit run in a schema, then the others and those the
    schema gives back from their patches, in their order; in patch mode
    all of them from their patches."""

    def setUp(self):
        self.calls = []
        saved = (sch.run_schema, mu.run_patches)

        def run_schema(tree, todo, loaded, results, opts, runs, kept, write,
                       tool):
            self.calls.append(('schema', [m.name for m in todo],
                               sorted(loaded), list(kept)))
            back = [m for m in todo if m.name == 'c']
            return list(kept) + [m.name for m in todo if m not in back], \
                back

        def run_patches(tree, loaded, results, timeout, jobs, runs, kept,
                        write, tool):
            self.calls.append(('patch', [lm['name'] for lm in loaded],
                               list(kept), (timeout, jobs, runs, tool)))
            return list(kept) + [lm['name'] for lm in loaded]
        sch.run_schema, mu.run_patches = run_schema, run_patches
        self.addCleanup(self.restore, saved)

    @staticmethod
    def restore(saved):
        sch.run_schema, mu.run_patches = saved

    def run_mode(self, mode, fit_names):
        loaded = [{'name': n} for n in 'abcde']
        fit = [types.SimpleNamespace(name=n) for n in fit_names]
        opts = types.SimpleNamespace(mode=mode, timeout=40, jobs=2)
        return sch.run_mutants(None, loaded, fit, opts, '/r', 'runs',
                               ['k'], None, 'tool')

    def test_schema_then_the_rest_from_their_patches(self):
        got = self.run_mode('schema', ['b', 'c', 'd'])
        self.assertEqual(self.calls, [
            ('schema', ['b', 'c', 'd'], list('abcde'), ['k']),
            ('patch', ['a', 'c', 'e'], ['k', 'b', 'd'],
             (40, 2, 'runs', 'tool'))])
        self.assertEqual(got, ['k', 'b', 'd', 'a', 'c', 'e'])

    def test_patch_mode_and_a_schema_without_mutants(self):
        for mode, fit in (('patch', ['b', 'c']), ('schema', [])):
            self.calls = []
            got = self.run_mode(mode, fit)
            self.assertEqual(self.calls, [('patch', list('abcde'), ['k'],
                                           (40, 2, 'runs', 'tool'))])
            self.assertEqual(got, ['k'] + list('abcde'))


if __name__ == '__main__':
    unittest.main()
