"""Tests of tools/_generator.py: every operator on small C snippets, what
is left alone, the names and their stability."""

import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOOLS = HERE.parent
sys.path.insert(0, str(TOOLS))

import _cscan  # noqa: E402
import _generator as gen  # noqa: E402

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
    src = _cscan.Source(text)
    first, last = _cscan.source_extents(text, func)[0]
    return gen.function_mutants(src, func, path, first, last)


def body(code, sig='int f(int a, int b, unsigned int flags)'):
    """A file with one function whose body is code (tab-indented lines)."""
    lines = ''.join('\t%s\n' % ln if ln else '\n'
                    for ln in code.split('\n'))
    return '%s\n{\n%s}\n' % (sig, lines)


def changes(text, func='f'):
    """{name: 'new lines joined by |'} of the mutants of func."""
    return {m.name: '|'.join(ln.strip() for ln in m.new)
            for m in mutants_of(text, func)}


class Operators(unittest.TestCase):
    def assert_changes(self, text, want):
        """Each mutant (name, new lines) of want is a mutant of f in
        text; return changes(text)."""
        got = changes(text)
        for name, new in want:
            self.assertEqual(got.get(name), new, name)
        return got

    def test_negate(self):
        self.assert_changes(body('if (a)\n\treturn 1;\n'
                                 'if (!g(a))\n\treturn 2;\n'
                                 'if (a && b)\n\treturn 3;\n'
                                 'while (a)\n\tb--;\n'
                                 'do {\n\ta++;\n} while (b);\n'
                                 'return 0;'),
                            [('f+2-negate', 'if (!a)'),
                             ('f+4-negate', 'if (g(a))'),
                             ('f+6-negate', 'if (!(a && b))'),
                             ('f+8-negate', 'while (!a)'),
                             ('f+12-negate', '} while (!b);')])

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
        got = self.assert_changes(
            body('a += b - c;\nb++;\nreturn -EINVAL;'),
            [('f+2-add2sub', 'a -= b - c;'), ('f+2-sub2add', 'a += b + c;'),
             ('f+3-add2sub', 'b--;')])
        self.assertNotIn('f+4-sub2add', got)     # unary minus

    def test_constants(self):
        self.assert_changes(body('a = 0x10UL;\nb = 0;\nreturn 7;'), [
            ('f+2-inc', 'a = 0x11UL;'), ('f+2-dec', 'a = 0xfUL;'),
            ('f+3-dec', 'b = (-1);'), ('f+4-inc', 'return 8;')])

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
        self.assertEqual(_cscan.source_extents(text, 'f'), [(2, 7)])
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
            self.assertRegex(n, gen.NAME_RE)
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



if __name__ == '__main__':
    unittest.main()
