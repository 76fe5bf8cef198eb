"""Tests of tools/_cscan.py, the C scanner: the definitions it finds in
kernel style and what it answers from them (the extents of a function,
the function around a line, the text of the function around a pin call),
the tokenizer and the signatures, and what a header defines."""

import os
import shutil
import subprocess
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOOLS = HERE.parent
sys.path.insert(0, str(TOOLS))

import _common as common  # noqa: E402
import _cscan as cs  # noqa: E402

# Lines 1-30: a comment, a function whose return type is on the line
# before its name, a one-line stub, a function that ends with '};', one
# whose signature runs over two lines after an attribute macro, and the
# #ifdef alternatives of one function.
SOURCE = '''\
/* a file */
static struct folio *
first_fn(int a)
{
	if (a)
		return NULL;
	return g(a);
}

static inline void stub(void) { }

static int __init ends_oddly(void)
{
	return 0;
};

__attribute__((nonnull))
static long two_lines(unsigned long nr,
		      struct page **pages)
{
	return nr;
}
#ifdef CONFIG_X
int alt(void)
{
	return 1;
}
#else
int alt(void)
{
	return 0;
}
#endif
'''
LINES = SOURCE.splitlines()


class Definitions(unittest.TestCase):
    def test_kernel_style_definitions(self):
        got = [(d.name, d.head, d.first, d.open, d.last)
               for d in cs.definitions(LINES)]
        self.assertEqual(got, [('first_fn', 2, 3, 4, 8),
                               ('ends_oddly', 12, 12, 13, 15),
                               ('two_lines', 17, 18, 20, 22),
                               ('alt', 24, 24, 25, 27),
                               ('alt', 29, 29, 30, 32)])

    def test_source_extents(self):
        self.assertEqual(cs.source_extents(SOURCE, 'first_fn'), [(3, 8)])
        self.assertEqual(cs.source_extents(SOURCE, 'alt'),
                         [(24, 27), (29, 32)])
        # A closing '};' ends the function, not the next '}' alone.
        self.assertEqual(cs.source_extents(SOURCE, 'ends_oddly'),
                         [(12, 15)])
        # Not kernel style: a one-line stub is no definition.
        self.assertEqual(cs.source_extents(SOURCE, 'stub'), [])
        self.assertEqual(cs.source_extents(SOURCE, 'g'), [])

    def test_enclosing_function(self):
        for line, want in ((1, None), (2, None), (3, 'first_fn'),
                           (5, 'first_fn'), (8, 'first_fn'), (9, None),
                           (10, None), (16, None), (17, None),
                           (19, 'two_lines'), (21, 'two_lines'),
                           (26, 'alt'), (28, None), (31, 'alt'),
                           (33, None), (99, None)):
            self.assertEqual(cs.enclosing_function(SOURCE, line), want,
                             line)

    def test_function_span_is_the_whole_text_around_a_body_line(self):
        for line, want in ((3, None), (4, (2, 8)), (6, (2, 8)),
                           (8, (2, 8)), (9, None), (11, None),
                           (19, None), (21, (17, 22)), (0, None),
                           (99, None)):
            self.assertEqual(cs.function_span(LINES, line), want, line)

    def test_an_unclosed_body_ends_the_scan(self):
        self.assertEqual(cs.definitions(['int f(void)', '{', '\tg();']), [])

    def test_signature_start(self):
        self.assertEqual(cs.signature_start(LINES, 'first_fn', 3), 2)
        self.assertEqual(cs.signature_start(LINES, 'alt', 24), 24)
        self.assertEqual(cs.signature_start(LINES, 'two_lines', 18), 18)


def token_texts(text):
    """The text of each token of text."""
    return [t.text for t in cs.tokenize(text)]


class Tokenizer(unittest.TestCase):
    def test_comments_strings_and_preprocessor_give_no_code(self):
        self.assertEqual(token_texts('#define X(a) \\\n\t((a) < 1)\n'
                                     'a /* b < c */ -> d // e == f\n'
                                     '  #if A > 1\n'
                                     'g("h < i", \'<\') <= 0x1fUL;\n'),
                         ['a', '->', 'd', 'g', '(', '"h < i"', ',', "'<'",
                          ')', '<=', '0x1fUL', ';'])

    def test_comment_on_a_directive_line(self):
        self.assertEqual(token_texts('#endif /* X\n  y */\nz\n'), ['z'])

    def test_unterminated_comment_is_an_error(self):
        with self.assertRaisesRegex(common.ToolError, 'unterminated'):
            cs.tokenize('a /* b')

    def test_function_tokens_and_return_kind(self):
        src = cs.Source(SOURCE)
        toks, kind = cs.function_tokens(src, 'first_fn', 3, 8)
        self.assertEqual([t.text for t in toks[:4]],
                         ['first_fn', '(', 'int', 'a'])
        self.assertEqual(toks[-1].text, '}')
        self.assertEqual(kind, 'ptr')
        self.assertEqual(cs.function_tokens(src, 'two_lines', 18, 22)[1],
                         'int')
        for sig, want in (('static void\nf(int a)', 'void'),
                          ('void *f(int a)', 'ptr'),
                          ('static inline bool f(void)', 'bool')):
            self.assertEqual(cs.return_kind(cs.tokenize(sig), 'f'), want)

    def test_source_lines_and_offsets(self):
        src = cs.Source('ab\ncd\n')
        self.assertEqual((src.lines, src.starts), (['ab', 'cd'], [0, 3, 6]))
        self.assertEqual([src.line_of(o) for o in (0, 2, 3, 5)],
                         [1, 1, 2, 2])


class HeaderDefinitions(unittest.TestCase):
    def test_inline_functions_and_macros(self):
        text = ('static inline bool f(int a)\n{\n\treturn g(a);\n}\n'
                'static inline int s(void) { return 0; }\n'
                'static __always_inline int t(void)\n{\n\treturn h();\n}\n'
                '#define M(a) \\\n\tf(a)\n#define N 1\n')
        got = dict(cs.header_definitions(text))
        self.assertEqual(sorted(got), ['M', 'f', 's', 't'])
        self.assertIn('g(a)', got['f'])
        # A one-line stub's text runs on to the next '}' in column 0.
        self.assertIn('h()', got['s'])
        self.assertEqual(got['M'].strip(), 'a) \\\n\tf(a)')


class RealTrees(unittest.TestCase):
    """Every function of each prepared tree's pin core has a definition
    that the scanner finds, and the function around each of its lines is
    that function."""

    def test_pin_core(self):
        done = 0
        for tree in common.read_trees():
            if not os.path.isfile(os.path.join(tree.linux, 'mm', 'gup.c')) \
                    or not shutil.which('git'):
                continue
            for func, path in common.read_pin_core(tree):
                text = subprocess.run(
                    ['git', '-C', tree.linux, 'show', 'HEAD:' + path],
                    stdout=subprocess.PIPE, check=True).stdout.decode(
                        'utf-8', 'surrogateescape')
                extents = cs.source_extents(text, func)
                self.assertTrue(extents, '%s: %s' % (tree.name, func))
                first, last = extents[0]
                self.assertEqual({cs.enclosing_function(text, n)
                                  for n in range(first, last + 1)}, {func})
                done += 1
        if not done:
            self.skipTest('no prepared build/TREE/linux')


if __name__ == '__main__':
    unittest.main()
