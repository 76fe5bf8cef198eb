"""Tests of tools/coverage.py's pure parts: the console dump of the .gcda
images, their place in the build directory, and the per-function summary
of gcov's JSON."""
import importlib.util
import os
import shutil
import sys
import tempfile
import unittest
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location(
    'coverage_tool', os.path.join(HERE, '..', 'coverage.py'))
cov = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(cov)

KPATH = '/work/main/build/gcov-x86_64/mm/gup.gcda'


def line(tag, text):
    """A console line as the kernel prints it: text, then its crc32."""
    return '%s: %s %s' % (tag, text, cov.crc32(text))


def dump(path, data, chunk=4, prefix='', size=None, crc=None):
    """Console lines as kunit/harness/mm/gup_kunit_harness.c prints one
    copy of one file (@size and @crc override the GCOV-END line's)."""
    out = ['KTAP version 1', '# Subtest: gup_pin_final']
    for off in range(0, len(data), chunk):
        out.append(prefix + line('GCOV', '%s %d %s' % (
            path, off, data[off:off + chunk].hex())))
    out.append(prefix + line('GCOV-END', '%s %d %s' % (
        path, len(data) if size is None else size,
        crc or cov.crc32(data))))
    out.append('ok 6 gup_pin_final')
    return out


class ParseConsole(unittest.TestCase):
    data = bytes(range(256)) * 3 + b'tail'

    def test_round_trip(self):
        self.assertEqual(cov.parse_console(dump(KPATH, self.data)),
                         {KPATH: self.data})

    def test_timestamp_prefix_and_crlf(self):
        lines = [ln + '\r\n' for ln in dump(KPATH, self.data,
                                             prefix='[    3.14] ')]
        self.assertEqual(cov.parse_console(lines)[KPATH], self.data)

    def test_two_files(self):
        other = '/b/mm/memremap.gcda'
        got = cov.parse_console(dump(KPATH, self.data) +
                                dump(other, b'\x01\x02\x03'))
        self.assertEqual(sorted(got), [other, KPATH])

    def test_empty_file(self):
        self.assertEqual(cov.parse_console(dump(KPATH, b''))[KPATH], b'')

    def test_not_hex_under_a_good_line_crc_is_an_error(self):
        lines = dump(KPATH, self.data)
        lines[5] = line('GCOV', '%s 12 zz' % KPATH)
        with self.assertRaisesRegex(cov.ToolError, 'offset 12 is not hex'):
            cov.parse_console(lines)

    def test_damaged_line_in_the_only_copy_is_an_error(self):
        lines = dump(KPATH, self.data)
        lines[5] = lines[5].replace('/build/', '/buld/')
        with self.assertRaisesRegex(cov.ToolError,
                                    'offset 12 whole .lost console'):
            cov.parse_console(lines)

    def test_lost_character_is_taken_from_the_second_copy(self):
        # What CI's serial console did under load: a character of the
        # path lost in one line of the dump.
        first = dump(KPATH, self.data)
        first[5] = first[5].replace('/build/', '/buld/')
        notes = []
        got = cov.parse_console(first + dump(KPATH, self.data), notes)
        self.assertEqual(got[KPATH], self.data)
        self.assertEqual(notes, ['1 damaged GCOV line(s) left out'])

    def test_flipped_byte_is_taken_from_the_second_copy(self):
        first = dump(KPATH, self.data)
        first[5] = first[5][:-12] + ('00' if first[5][-12:-10] != '00'
                                     else '01') + first[5][-10:]
        got = cov.parse_console(dump(KPATH, self.data) + first)
        self.assertEqual(got[KPATH], self.data)

    def test_lines_lost_from_different_copies_are_recovered(self):
        first, second = dump(KPATH, self.data), dump(KPATH, self.data)
        del first[10]
        del second[20]
        self.assertEqual(cov.parse_console(first + second)[KPATH],
                         self.data)

    def test_line_lost_from_every_copy_is_an_error(self):
        first, second = dump(KPATH, self.data), dump(KPATH, self.data)
        del first[10]
        del second[10]
        with self.assertRaisesRegex(cov.ToolError, 'offset 32 whole'):
            cov.parse_console(first + second)

    def test_truncated_log_is_an_error(self):
        lines = dump(KPATH, self.data)[:20]
        with self.assertRaisesRegex(cov.ToolError, 'no GCOV-END'):
            cov.parse_console(lines)

    def test_short_file_is_an_error(self):
        lines = dump(KPATH, self.data, size=len(self.data) - 1)
        with self.assertRaisesRegex(cov.ToolError, 'truncated'):
            cov.parse_console(lines)

    def test_wrong_file_crc_is_an_error(self):
        lines = dump(KPATH, self.data, crc='00000000')
        with self.assertRaisesRegex(cov.ToolError, 'crc32 .* says'):
            cov.parse_console(lines)

    def test_kernel_error_is_reported(self):
        with self.assertRaisesRegex(cov.ToolError, 'no memory'):
            cov.parse_console(['GCOV-ERROR: /x/mm/gup.gcda no memory for 9 '
                               'bytes'])

    def test_no_data_is_an_error(self):
        with self.assertRaisesRegex(cov.ToolError, 'no GCOV data'):
            cov.parse_console(['KTAP version 1', 'ok 1 gup_pin'])

    def test_later_dump_replaces_earlier(self):
        got = cov.parse_console(dump(KPATH, b'old!') + dump(KPATH, b'new'))
        self.assertEqual(got[KPATH], b'new')


class MapGcda(unittest.TestCase):
    def test_longest_tail_with_a_gcno(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, 'mm'))
            open(os.path.join(d, 'mm', 'gup.gcno'), 'w').close()
            self.assertEqual(cov.map_gcda('/elsewhere/build/mm/gup.gcda', d),
                             os.path.join(d, 'mm', 'gup.gcda'))
            with self.assertRaisesRegex(cov.ToolError, 'no .gcno'):
                cov.map_gcda('/elsewhere/mm/memremap.gcda', d)


def gcov_doc():
    """gcov --json-format of a fabricated mm/gup.c and an inline header."""
    def line(n, count, branches=(), fn=None):
        d = {'line_number': n, 'count': count, 'unexecuted_block': False,
             'branches': [{'count': c, 'throw': False, 'fallthrough': True}
                          for c in branches]}
        if fn:
            d['function_name'] = fn
        return d
    return {
        'format_version': '1', 'gcc_version': '12.2.0',
        'current_working_directory': '/k/build',
        'data_file': '/k/build/mm/gup.gcda',
        'files': [
            {'file': '/k/linux/mm/gup.c',
             'functions': [
                 {'name': 'try_get_folio', 'start_line': 10, 'end_line': 14,
                  'blocks': 4, 'blocks_executed': 3, 'execution_count': 5},
                 {'name': 'gup_put_folio', 'start_line': 20, 'end_line': 22,
                  'blocks': 2, 'blocks_executed': 2, 'execution_count': 5}],
             'lines': [line(10, 5, fn='try_get_folio'),
                       line(11, 5, (5, 0), fn='try_get_folio'),
                       line(12, 0, fn='try_get_folio'),
                       line(14, 5, fn='try_get_folio'),
                       line(20, 5, (3, 2), fn='gup_put_folio'),
                       line(22, 5, fn='gup_put_folio')]},
            {'file': '../linux/include/linux/mm.h', 'functions': [],
             'lines': [line(101, 7, (7, 1)), line(102, 0)]}]}


MM_H = '''\
/* comment */
static inline bool folio_maybe_dma_pinned(struct folio *folio);

static inline bool folio_maybe_dma_pinned(struct folio *folio)
{
'''


class Summarize(unittest.TestCase):
    def summary(self, docs, fns, source=None):
        return {r['function']: r for r in cov.summarize(
            docs, fns, tree='/k/linux', read_source=lambda _p: source)}

    def test_lines_and_branches_per_function(self):
        got = self.summary([gcov_doc()], [('try_get_folio', 'mm/gup.c'),
                                          ('gup_put_folio', 'mm/gup.c')])
        tgf = got['try_get_folio']
        self.assertEqual((tgf['lines']['hit'], tgf['lines']['total']), (3, 4))
        self.assertEqual((tgf['branches']['hit'], tgf['branches']['total']),
                         (1, 2))
        self.assertEqual(tgf['unexecuted_lines'], [12])
        self.assertEqual(tgf['untaken_branch_lines'], [11])
        self.assertFalse(tgf['meets_goal'])
        self.assertTrue(got['gup_put_folio']['meets_goal'])
        self.assertEqual(got['gup_put_folio']['lines']['percent'], 100.0)

    def test_lines_merge_over_objects(self):
        other = gcov_doc()
        other['files'][0]['lines'][2]['count'] = 1
        got = self.summary([gcov_doc(), other],
                           [('try_get_folio', 'mm/gup.c')])
        self.assertEqual(got['try_get_folio']['lines']['hit'], 4)
        self.assertEqual(got['try_get_folio']['branches']['total'], 4)

    def test_inlined_header_function_takes_extent_from_source(self):
        src = MM_H + '\treturn 1;\n' * 96 + '}\n'
        got = self.summary([gcov_doc()],
                           [('folio_maybe_dma_pinned', 'include/linux/mm.h')],
                           source=src)['folio_maybe_dma_pinned']
        self.assertEqual((got['start_line'], got['end_line']), (4, 102))
        self.assertEqual(got['extent_from'], 'source')
        self.assertEqual((got['lines']['hit'], got['lines']['total']), (1, 2))
        self.assertEqual(got['unexecuted_lines'], [102])

    def test_unknown_function_is_an_error(self):
        with self.assertRaisesRegex(cov.ToolError, 'nowhere not found'):
            self.summary([gcov_doc()], [('nowhere', 'mm/gup.c')], source='')


class PinCore(unittest.TestCase):
    """The pin core of a tree comes from kunit/TREE/pin-core."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='gpk-pin-core-')
        self.addCleanup(shutil.rmtree, self.tmp)
        common = sys.modules['_common']
        saved = common.KUNIT
        common.KUNIT = self.tmp
        self.addCleanup(setattr, common, 'KUNIT', saved)
        self.tree = common.Tree('6.12', 'linux-source-6.12')

    def write(self, text):
        os.makedirs(os.path.join(self.tmp, '6.12'), exist_ok=True)
        with open(os.path.join(self.tmp, '6.12', 'pin-core'), 'w') as f:
            f.write(text)

    def test_list(self):
        self.write('# the pin core\ntry_grab_folio   mm/gup.c  # x\n\n'
                   'folio_maybe_dma_pinned include/linux/mm.h\n')
        self.assertEqual(cov.read_pin_core(self.tree),
                         [('try_grab_folio', 'mm/gup.c'),
                          ('folio_maybe_dma_pinned', 'include/linux/mm.h')])

    def test_missing_file_is_one_line(self):
        with self.assertRaisesRegex(cov.ToolError, r'^tree 6\.12 has no '
                                    r'.*6\.12/pin-core .*no pin core'):
            cov.read_pin_core(self.tree)

    def test_bad_lines(self):
        for text, why in (('try_grab_folio\n', r'pin-core:1: expected'),
                          ('# c\nf() mm/gup.c\n', r'pin-core:2: expected'),
                          ('# only comments\n', 'lists no function')):
            self.write(text)
            with self.assertRaisesRegex(cov.ToolError, why):
                cov.read_pin_core(self.tree)

    def test_objects_are_the_c_files_once_in_order(self):
        self.write('try_grab_folio mm/gup.c\n'
                   'folio_maybe_dma_pinned include/linux/mm.h\n'
                   'memfd_alloc_folio mm/memfd.c\n'
                   'unpin_folios mm/gup.c\n')
        self.assertEqual(cov.pin_core_objects(self.tree),
                         ['gup.o', 'memfd.o'])

    def test_profile_option_overrides_the_pin_core(self):
        self.write('try_grab_folio mm/gup.c\n')
        args = type('Args', (), {'profile': ['x.o']})()
        self.assertEqual(cov.profiled(args, self.tree), ['x.o'])
        args.profile = None
        self.assertEqual(cov.profiled(args, self.tree), ['gup.o'])

    def test_the_6_1_list(self):
        common = sys.modules['_common']
        common.KUNIT = os.path.join(HERE, '..', '..', 'kunit')
        fns = cov.read_pin_core(common.Tree('6.1', 'linux-source-6.1'))
        self.assertEqual(len(fns), 18)
        self.assertEqual(fns[0], ('try_get_folio', 'mm/gup.c'))
        self.assertEqual(fns[-1], ('free_zone_device_page', 'mm/memremap.c'))


class Docs(unittest.TestCase):
    def test_cited_lines_and_ranges(self):
        refs = cov.documented_refs('| `mm/gup.c:12` | x |\n'
                                   '| `include/linux/mm.h:101-102` | y |')
        rec = {'file': 'mm/gup.c', 'unexecuted_lines': [12, 13],
               'untaken_branch_lines': [11]}
        self.assertEqual(cov.undocumented(rec, refs), [11, 13])
        self.assertIn(('include/linux/mm.h', 102), refs)

    def test_explanations_of_lines_that_run_now_are_out_of_date(self):
        refs = cov.documented_refs('| `mm/gup.c:12` | x |\n'
                                   '| `mm/gup.c:14-15` | y |\n'
                                   '| `mm/gup.c:40` | another function |\n'
                                   '| `mm/memfd.c:13` | another file |')
        rec = {'file': 'mm/gup.c', 'start_line': 10, 'end_line': 20,
               'unexecuted_lines': [12], 'untaken_branch_lines': [15]}
        self.assertEqual(cov.stale_refs([rec], refs), [('mm/gup.c', 14)])

    def test_headings_and_prose_explain_nothing(self):
        refs = cov.documented_refs('### f (mm/gup.c:10-20)\n'
                                   'see `mm/gup.c:14`\n'
                                   '| x | `mm/gup.c:15` is like 14 |\n'
                                   '| `mm/gup.c:16` | y |')
        self.assertEqual(refs, {('mm/gup.c', 16)})


if __name__ == '__main__':
    unittest.main()
