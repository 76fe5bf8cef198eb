"""Tests of tools/audit.py: the parsing and classification of the facts
that the semantic patches report (no tree, no spatch), the review, the
rules of tools/cocci/*.cocci on small C fixtures (spatch needed), and the
planted mutants of tools/cocci/planted/TREE/ (spatch and the prepared
tree needed; check.py's audit step runs those, so its tools step skips
them with GPK_AUDIT_PLANTED=check)."""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
sys.path.insert(0, TOOLS)
SPEC = importlib.util.spec_from_file_location(
    'audit_tool', os.path.join(TOOLS, 'audit.py'))
au = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(au)
import _audit_classify as ac  # noqa: E402
import _audit_spatch as sp  # noqa: E402
import _cscan  # noqa: E402
common = sys.modules['_common']
SPATCH = shutil.which('spatch')

C_FILE = '''\
/* a fixture */
static int helper(int x)
{
	return x;
}

static int keeps(struct ctx *c, unsigned long a, int n)
{
	struct page **pages = kvmalloc_array(n, sizeof(*pages), GFP_KERNEL);
	int ret;

	ret = pin_user_pages_fast(a, n, FOLL_WRITE, pages);
	if (ret < 0)
		return ret;
	c->pages = pages;
	return 0;
}

static void drop(struct ctx *c, int n)
{
	unpin_user_pages(c->pages, n);
}
'''


def fact(kind, line, function, path='drivers/x/a.c', **kw):
    d = dict(kind=kind, file=path, line=line, col=1, function=function)
    d.update(kw)
    return d


class Facts(unittest.TestCase):
    def test_parse_strips_the_run_directory_and_duplicates(self):
        line = 'AUDIT ' + json.dumps(dict(kind='pin', file='/tmp/x/./a.c',
                                          line='3', function='f'))
        got = sp.parse_facts('noise\n%s\n%s\n' % (line, line), '/tmp/x')
        self.assertEqual(got, [dict(kind='pin', file='a.c', line=3,
                                    function='f')])

    def test_malformed_fact_is_an_error(self):
        with self.assertRaisesRegex(common.ToolError, 'malformed'):
            sp.parse_facts('AUDIT {nope')
        with self.assertRaisesRegex(common.ToolError, 'without kind'):
            sp.parse_facts('AUDIT {"file": "a.c"}')

    def test_base_of(self):
        for expr, base in (('pages', 'pages'), ('&page', 'page'),
                           ('pages + i', 'pages'), ('&pvec [ pinned ]',
                                                    'pvec'),
                           ('(struct page **)(vec->ptrs)', 'vec->ptrs'),
                           ('umem -> page_list', 'umem->page_list'),
                           ('mem->hpages + entry', 'mem->hpages')):
            self.assertEqual(ac.base_of(expr), base, expr)

    def test_mentions_is_token_bounded(self):
        self.assertTrue(ac.mentions('pages , nr', 'pages'))
        self.assertTrue(ac.mentions('& page , 1 , true', 'page'))
        self.assertFalse(ac.mentions('x -> pages , nr', 'pages'))
        self.assertFalse(ac.mentions('page_list', 'page'))


class FunctionText(unittest.TestCase):
    lines = C_FILE.splitlines()

    def test_span_of_a_call(self):
        self.assertEqual(_cscan.function_span(self.lines, 12), (7, 17))
        self.assertIsNone(_cscan.function_span(self.lines, 1))

    def test_hash_changes_with_the_function_only(self):
        text = ac.function_text(self.lines, 12)
        other = C_FILE.replace('unpin_user_pages(c->pages, n)',
                               'put_page(c->pages[0])').splitlines()
        self.assertEqual(ac.text_hash(ac.function_text(other, 12)),
                         ac.text_hash(text))
        changed = C_FILE.replace('FOLL_WRITE', 'FOLL_WRITE | FOLL_FORCE')
        self.assertNotEqual(ac.text_hash(ac.function_text(
            changed.splitlines(), 12)), ac.text_hash(text))

    def test_escapes(self):
        text = ac.function_text(self.lines, 12)
        self.assertEqual(ac.escapes(text, 'pages', 'keeps'),
                         'stored in a structure')
        self.assertEqual(ac.field_of(text, 'pages'), 'pages')
        self.assertIn('field', ac.escapes(text, 'c->pages', 'keeps'))
        self.assertIn('parameter', ac.escapes(
            'int f(struct page **pages)\n{\n\tg();\n}\n', 'pages', 'f'))
        self.assertEqual(ac.escapes(
            'int f(void)\n{\n\treturn pages;\n}\n', 'pages', 'f'),
            'returned')
        self.assertEqual(ac.escapes(
            'int f(void)\n{\n\tunpin_user_pages(pages, n);\n}\n',
            'pages', 'f'), '')


class Classify(unittest.TestCase):
    def files(self, text=C_FILE):
        return {'drivers/x/a.c': text.splitlines()}

    def pin(self, line=12, function='keeps', pages='pages', **kw):
        return fact('pin', line, function, call='pin_user_pages_fast',
                    flags='FOLL_WRITE', pages=pages, **kw)

    def classify(self, facts, text=C_FILE):
        sites, extra = ac.classify(facts, self.files(text))
        return sites[0] if sites else None, extra

    def test_field_followed_to_an_unpin_is_matched(self):
        s, extra = self.classify([
            self.pin(),
            fact('release', 21, 'drop', call='unpin_user_pages',
                 args='c -> pages , n')])
        self.assertEqual(s['class'], 'matched', s['why'])
        self.assertEqual(s['key'],
                         'drivers/x/a.c:keeps:pin_user_pages_fast')
        self.assertEqual(extra, [])

    def test_field_released_by_put_page_is_mismatched(self):
        s, _ = self.classify([
            self.pin(),
            fact('release', 21, 'drop', call='put_page',
                 args='c -> pages [ 0 ]')])
        self.assertEqual(s['class'], 'mismatched')
        self.assertIn('put_page', s['why'])

    def test_no_release_is_unresolved(self):
        s, _ = self.classify([self.pin()])
        self.assertEqual(s['class'], 'unresolved')
        self.assertEqual(s['why'], 'stored in a structure')

    def test_local_array_released_in_the_function(self):
        text = ('int f(unsigned long a)\n{\n\tstruct page *page;\n'
                '\tpin_user_pages_fast(a, 1, 0, &page);\n'
                '\tunpin_user_page(page);\n\treturn 0;\n}\n')
        facts = [fact('pin', 4, 'f', call='pin_user_pages_fast', flags='0',
                      pages='& page'),
                 fact('release', 5, 'f', call='unpin_user_page',
                      args='page')]
        s, _ = self.classify(facts, text)
        self.assertEqual(s['class'], 'matched')
        facts[1]['call'] = 'put_page'
        s, _ = self.classify(facts, text)
        self.assertEqual(s['class'], 'mismatched')

    def test_flag_and_error_count_make_a_site_mismatched(self):
        s, _ = self.classify([
            self.pin(), fact('flag', 12, 'keeps',
                             call='pin_user_pages_fast', flag='FOLL_GET')])
        self.assertEqual(s['class'], 'mismatched')
        self.assertIn('FOLL_GET', s['why'])
        s, _ = self.classify([
            self.pin(), fact('errcount', 12, 'keeps',
                             call='pin_user_pages_fast', count='ret',
                             unpin='unpin_user_pages', release_line='14')])
        self.assertIn('unchecked', s['why'])

    def test_structure_stored_in_the_function_is_followed(self):
        facts = [self.pin(),
                 fact('store', 15, 'keeps', structure='ib_umem',
                      pages='pages'),
                 fact('struct_release', 21, 'drop', structure='ib_umem',
                      call='unpin_user_page_range_dirty_lock')]
        s, _ = self.classify(facts)
        self.assertEqual(s['class'], 'matched')
        self.assertIn('ib_umem', s['why'])
        facts[2]['call'] = 'put_page'
        s, extra = self.classify(facts)
        self.assertEqual(s['class'], 'mismatched')
        self.assertEqual([x['kind'] for x in extra], ['struct-put'])

    def test_per_file_structure_stays_in_its_file(self):
        facts = [self.pin(),
                 fact('store', 15, 'keeps', structure='pfn', pages='pages',
                      scope='file'),
                 fact('struct_release', 3, 'other', path='drivers/y/b.c',
                      structure='pfn', call='put_page', scope='file')]
        s, extra = self.classify(facts)
        self.assertNotEqual(s['class'], 'mismatched')
        self.assertEqual(extra, [])

    def test_guarded_callee_releases_belong_to_the_structure(self):
        facts = [fact('guarded_call', 3, 'bio_release_pages',
                      path='include/linux/bio.h', structure='bio_pinned',
                      callee='__bio_release_pages'),
                 fact('release', 9, '__bio_release_pages',
                      path='block/bio.c', call='folio_put_refs',
                      args='fi . folio , n')]
        _s, extra = ac.classify(facts, {})
        self.assertEqual([(x['kind'], x['file']) for x in extra],
                         [('struct-put', 'block/bio.c')])

    def test_get_pages_released_by_an_unpin(self):
        facts = [fact('get', 4, 'f', call='get_user_pages_fast', flags='0',
                      pages='pages'),
                 fact('release', 6, 'f', call='unpin_user_pages',
                      args='pages , n'),
                 fact('flag', 8, 'g', call='get_user_pages', flag='FOLL_PIN')]
        sites, extra = ac.classify(facts, {})
        self.assertEqual(sites, [])
        self.assertEqual([x['kind'] for x in extra],
                         ['get-unpin', 'get-foll-pin'])

    def test_second_call_of_an_api_in_a_function_gets_its_own_key(self):
        sites, _ = ac.classify([self.pin(), self.pin(line=13)],
                               self.files())
        self.assertEqual([s['key'].rsplit(':', 1)[1] for s in sites],
                         ['pin_user_pages_fast', 'pin_user_pages_fast#2'])


class Review(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.path = os.path.join(self.tmp, 'review.md')
        self.files = {'drivers/x/a.c': C_FILE.splitlines()}
        self.site = dict(key='drivers/x/a.c:keeps:pin_user_pages_fast',
                         file='drivers/x/a.c', line=12, function='keeps',
                         call='pin_user_pages_fast', hash='0123456789ab',
                         why='stored in a structure', **{'class':
                                                         'unresolved'})

    def review(self, rows):
        with open(self.path, 'w') as f:
            f.write('| site | hash | verdict | release | why |\n|---|\n')
            f.write(''.join(r + '\n' for r in rows))
        return au.read_review(self.path)

    def row(self, hash='0123456789ab', verdict='ok', rel='drivers/x/a.c:21'):
        return ('| `drivers/x/a.c:keeps:pin_user_pages_fast` | `%s` | %s | '
                '`%s` | drop() unpins |' % (hash, verdict, rel))

    def test_current_verdict(self):
        probs = au.check_review([self.site], [], self.review([self.row()]),
                                self.files)
        self.assertEqual(probs, [])
        self.assertEqual(self.site['review'], 'current')

    def test_missing_and_stale_verdicts_fail(self):
        probs = au.check_review([self.site], [], {}, self.files)
        self.assertIn('no verdict', probs[0])
        probs = au.check_review([self.site], [], self.review(
            [self.row(hash='ffffffffffff')]), self.files)
        self.assertIn('stale', probs[0])

    def test_release_line_must_still_be_an_unpin(self):
        probs = au.check_review([self.site], [], self.review(
            [self.row(rel='drivers/x/a.c:20')]), self.files)
        self.assertIn('no unpin call now', probs[0])

    def test_a_mismatch_passes_only_as_a_known_bug(self):
        self.site['class'] = 'mismatched'
        probs = au.check_review([self.site], [], self.review([self.row()]),
                                self.files)
        self.assertIn('only a known bug', probs[0])
        probs = au.check_review([self.site], [], self.review(
            [self.row(verdict='bug')]), self.files)
        self.assertEqual(probs, [])

    def test_orphan_rows_fail_on_a_whole_tree_only(self):
        review = self.review([self.row()])
        self.assertIn('no pin site', au.check_review([], [], review,
                                                     self.files)[0])
        self.assertEqual(au.check_review([], [], review, self.files,
                                         whole=False), [])

    def test_bad_rows_are_errors(self):
        with self.assertRaisesRegex(common.ToolError, 'expected'):
            self.review(['| `k` | `xyz` | ok | `a.c:1` | why |'])
        with self.assertRaisesRegex(common.ToolError, 'twice'):
            self.review([self.row(), self.row()])
        with self.assertRaisesRegex(common.ToolError, 'no `file:line`'):
            self.review([self.row(rel='nowhere')])


class Planted(unittest.TestCase):
    def test_every_tree_has_its_planted_mutants(self):
        for tree in common.read_trees():
            mutants = au.planted_mutants(tree)
            self.assertGreaterEqual(len(mutants), 6, tree.name)
            for name, path, files, expect in mutants:
                self.assertRegex(expect, r'^MISMATCH \S+$', name)
                with open(path) as f:
                    text = f.read()
                for rel in files:
                    self.assertTrue(rel.endswith(('.c', '.h')), rel)
                self.assertIn('\n--- a/', text, name)


def run_tool(*args):
    env = dict(os.environ)
    return subprocess.run([sys.executable, os.path.join(TOOLS, 'audit.py')]
                          + list(args), text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env, timeout=600)


class Cli(unittest.TestCase):
    def test_help(self):
        proc = run_tool('--help')
        self.assertEqual(proc.returncode, 0)
        self.assertIn('unresolved', proc.stdout)

    def test_unknown_tree_is_one_line_and_exit_2(self):
        proc = run_tool('--tree', '9.9')
        self.assertEqual(proc.returncode, 2)
        self.assertEqual(len(proc.stderr.strip().splitlines()), 1)
        self.assertIn("unknown tree '9.9'", proc.stderr)

    def test_source_needs_one_tree(self):
        proc = run_tool('--source', '/nonexistent')
        self.assertEqual(proc.returncode, 2)
        self.assertIn('exactly one --tree', proc.stderr)


FLOW_C = '''\
int bad(unsigned long a, struct page **pages, int n)
{
	int ret;
	unsigned int gup_flags = FOLL_WRITE;

	ret = pin_user_pages_fast(a, n, FOLL_WRITE, pages);
	if (ret != n) {
		unpin_user_pages(pages, ret);
		return -EFAULT;
	}
	gup_flags |= FOLL_GET;
	ret = pin_user_pages_fast(a, n, gup_flags | FOLL_LONGTERM, pages);
	ret = get_user_pages_fast(a, n, FOLL_PIN, pages);
	return 0;
}

int good(unsigned long a, struct page **pages, int n)
{
	int ret;

	ret = pin_user_pages_fast(a, n, FOLL_WRITE, pages);
	if (ret < 0)
		return ret;
	if (ret != n) {
		unpin_user_pages(pages, ret);
		return -EFAULT;
	}
	unpin_user_pages(pages, n);
	return 0;
}
'''


@unittest.skipUnless(SPATCH, 'spatch (coccinelle) not installed')
class Rules(unittest.TestCase):
    """The semantic patches on a fixture: no tree needed."""

    def test_flow_rules(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        os.makedirs(os.path.join(tmp, 'drivers', 'x'))
        with open(os.path.join(tmp, 'drivers', 'x', 'a.c'), 'w') as f:
            f.write(FLOW_C)
        facts = sp.run_spatch(tmp, 1)
        got = sorted((f['kind'], f['function'], f['line'],
                      f.get('flag', '')) for f in facts
                     if f['kind'] in ('flag', 'errcount'))
        self.assertEqual(got, [('errcount', 'bad', 6, ''),
                               ('flag', 'bad', 12, 'FOLL_GET'),
                               ('flag', 'bad', 13, 'FOLL_PIN')])
        sites, _ = ac.classify(facts, sp.read_files(tmp, ['drivers/x/a.c']))
        self.assertEqual([(s['function'], s['class']) for s in sites],
                         [('bad', 'mismatched'), ('bad', 'mismatched'),
                          ('good', 'unresolved')])


def planted_cases():
    """(tree, mutant) for every planted mutant of every tree."""
    try:
        trees = common.read_trees()
    except common.ToolError:
        return []
    return [(t, m) for t in trees for m in au.planted_mutants(t)]


class PlantedMutants(unittest.TestCase):
    """Each planted caller mutant is flagged as a mismatch by the audit of
    a copy of the files it needs (tools/cocci/planted/TREE/)."""

    def test_planted(self):
        cases = planted_cases()
        self.assertTrue(cases)
        for tree, mutant in cases:
            with self.subTest(tree=tree.name, mutant=mutant[0]):
                if os.environ.get('GPK_AUDIT_PLANTED') == 'check':
                    self.skipTest('run by make check\'s audit step')
                if not SPATCH:
                    self.skipTest('spatch (coccinelle) not installed')
                state = common.load_state(tree)
                if not state or not state.get('series_head'):
                    self.skipTest('%s is not prepared (make tree TREE=%s)'
                                  % (tree.linux, tree.name))
                ok, why = au.run_planted(tree, tree.linux,
                                         state['series_head'], mutant, 2)
                self.assertTrue(ok, why)


if __name__ == '__main__':
    unittest.main()
