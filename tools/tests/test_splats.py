"""Tests of ktap_report's console-report (splat) accounting."""
import contextlib
import importlib.util
import io
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location(
    'ktap_report', os.path.join(HERE, '..', 'ktap_report.py'))
kr = importlib.util.module_from_spec(SPEC)
sys.modules.setdefault('ktap_report', kr)
SPEC.loader.exec_module(kr)

LOG = """Linux version 6.1.192
{before}KTAP version 1
1..1
    KTAP version 1
    # Subtest: gup_pin_warn
    1..2
    # warns_on_purpose: start
{decl1}{splat1}    ok 1 warns_on_purpose
    # quiet_case: start
{decl2}{splat2}    ok 2 quiet_case
# gup_pin_warn: pass:2 fail:0 skip:0 total:2
ok 1 gup_pin_warn
{after}reboot: Restarting system
"""

WARN = "WARNING: CPU: 0 PID: 1 at mm/gup.c:224 try_grab_page+0xc8/0x110\n"
DECLARED = [('gup_pin_warn.warns_on_purpose', 'WARNING:')]


def declare(case, text='WARNING:'):
    """The diagnostic line with which a case declares a report."""
    return f'    # {case}: expected report: {text}\n'


def run(declared=DECLARED, before='', splat1=WARN, splat2='', after='',
        decl1='', decl2=''):
    text = LOG.format(before=before, splat1=splat1, splat2=splat2,
                      after=after, decl1=decl1, decl2=decl2)
    result = kr.parse_log(text)
    problems = kr.apply_splats(result, text, declared)
    status = {f'{leaf.suite}.{leaf.name}': leaf.status
              for leaf in result.leaves()}
    return result, problems, status


class Splats(unittest.TestCase):
    def test_declared_warning_passes(self):
        result, problems, status = run()
        self.assertEqual(problems, [])
        self.assertEqual(result.exit_status(), 0)

    def test_undeclared_warning_fails_the_running_case(self):
        result, problems, status = run(splat2=WARN)
        self.assertEqual(status['gup_pin_warn.quiet_case'], kr.FAILED)
        self.assertEqual(status['gup_pin_warn.warns_on_purpose'], kr.PASSED)
        self.assertIn('unexpected console report', problems[0])
        self.assertEqual(result.exit_status(), 1)

    def test_declared_warning_that_did_not_appear_fails(self):
        result, problems, status = run(splat1='')
        self.assertEqual(status['gup_pin_warn.warns_on_purpose'], kr.FAILED)
        self.assertIn('did not appear', problems[0])

    def test_kasan_and_bad_page_reports_count(self):
        for line in ('BUG: KASAN: use-after-free in gup_put_folio\n',
                     'BUG: Bad page state in process swapper\n',
                     'WARNING: possible circular locking dependency '
                     'detected\n'):
            _r, problems, status = run(splat2=line)
            self.assertEqual(status['gup_pin_warn.quiet_case'], kr.FAILED,
                             line)

    def test_ext4_complaints_and_busy_inodes_count(self):
        for line in ('EXT4-fs warning (device vda): mpage_prepare_extent_'
                     'to_map:2671: inode #12: comm kunit_try_catch: page 0 '
                     'does not have buffers attached\n',
                     'EXT4-fs error (device vda): ext4_lookup:1855: inode '
                     '#2: comm kunit_try_catch: deleted inode referenced\n',
                     'VFS: Busy inodes after unmount of vda (ext4)\n'):
            _r, problems, status = run(splat2=line)
            self.assertEqual(status['gup_pin_warn.quiet_case'], kr.FAILED,
                             line)

    def test_ext4_notices_are_not_reports(self):
        line = ('EXT4-fs (vda): mounted filesystem with ordered data mode. '
                'Quota mode: none.\n')
        _r, problems, status = run(splat2=line)
        self.assertEqual(problems, [])

    def test_report_after_the_last_suite_fails_a_console_entry(self):
        leak = 'kmemleak: 1 new suspected memory leaks (see ' \
               '/sys/kernel/debug/kmemleak)\n'
        result, problems, status = run(after=leak)
        self.assertIn('console: console report outside any case',
                      problems[0])
        self.assertEqual(status['console.reports outside any case'],
                         kr.FAILED)
        self.assertEqual(result.exit_status(), 1)

    def test_report_before_kunit_fails_a_console_entry(self):
        _r, problems, _s = run(before=WARN)
        self.assertEqual(len(problems), 1)
        self.assertIn('outside any case', problems[0])

    def test_no_declarations_means_every_report_fails(self):
        result, problems, status = run(declared=[])
        self.assertEqual(status['gup_pin_warn.warns_on_purpose'], kr.FAILED)


RACE = 'BUG: KCSAN: data-race in sanity_check_pinned_pages / shrink_folio_list\n'
BOOT = 'BUG: KCSAN: data-race in lapic_cal_handler / setup_boot_APIC_clock\n'


def may(case, text='BUG: KCSAN: data-race in sanity_check_pinned_pages'):
    """The diagnostic line with which a case allows a benign race."""
    return f'    # {case}: may report: {text}\n'


class BenignRaces(unittest.TestCase):
    """A benign race that a case may meet ('# CASE: may report: TEXT') is
    allowed and never required; a race of the boot is allowed by a file
    line with the glob 'console'."""

    def test_declared_race_that_appears_passes(self):
        _r, problems, status = run(declared=[], splat1=RACE,
                                   decl1=may('warns_on_purpose'))
        self.assertEqual(problems, [])
        self.assertEqual(status['gup_pin_warn.warns_on_purpose'], kr.PASSED)

    def test_declared_race_that_does_not_appear_passes(self):
        _r, problems, status = run(declared=[], splat1='',
                                   decl1=may('warns_on_purpose'))
        self.assertEqual(problems, [])

    def test_another_race_fails(self):
        _r, problems, status = run(
            declared=[], splat1=RACE,
            decl1=may('warns_on_purpose', 'data-race in other / thing'))
        self.assertEqual(status['gup_pin_warn.warns_on_purpose'], kr.FAILED)
        self.assertIn('unexpected console report: BUG: KCSAN', problems[0])

    def test_allowing_a_race_allows_no_warning(self):
        _r, problems, status = run(declared=[], splat1=WARN + RACE,
                                   decl1=may('warns_on_purpose'))
        self.assertEqual(status['gup_pin_warn.warns_on_purpose'], kr.FAILED)

    def test_boot_race_fails_unless_a_console_line_allows_it(self):
        _r, problems, _s = run(before=BOOT)
        self.assertEqual(len(problems), 1)
        self.assertIn('outside any case: BUG: KCSAN', problems[0])
        _r, problems, _s = run(declared=DECLARED + [
            ('console', 'data-race in lapic_cal_handler / setup_boot_APIC')],
            before=BOOT)
        self.assertEqual(problems, [])
        _r, problems, _s = run(declared=DECLARED + [
            ('console', 'data-race in lapic_cal_handler / setup_boot_APIC')])
        self.assertEqual(problems, [])


class CaseDeclarations(unittest.TestCase):
    """A case declares its reports itself: '# CASE: expected report: TEXT'
    among its own diagnostics, before its result line."""

    def test_case_declaration_covers_its_warning(self):
        result, problems, status = run(
            declared=[], decl1=declare('warns_on_purpose'))
        self.assertEqual(problems, [])
        self.assertEqual(status['gup_pin_warn.warns_on_purpose'], kr.PASSED)
        self.assertEqual(result.exit_status(), 0)

    def test_declared_text_that_did_not_appear_fails(self):
        result, problems, status = run(
            declared=[], splat1='', decl1=declare('warns_on_purpose'))
        self.assertEqual(status['gup_pin_warn.warns_on_purpose'], kr.FAILED)
        self.assertEqual(problems, [
            'gup_pin_warn.warns_on_purpose: declared console report '
            '"WARNING:" did not appear'])
        self.assertEqual(result.exit_status(), 1)

    def test_every_declared_text_must_appear(self):
        both = declare('warns_on_purpose') + \
            declare('warns_on_purpose', 'refcount overflow')
        _r, problems, status = run(declared=[], decl1=both)
        self.assertEqual(status['gup_pin_warn.warns_on_purpose'], kr.FAILED)
        self.assertIn('"refcount overflow" did not appear', problems[0])

    def test_undeclared_warning_fails(self):
        for decl in ('', declare('warns_on_purpose', 'refcount overflow')):
            with self.subTest(decl=decl):
                _r, problems, status = run(declared=[], decl1=decl)
                self.assertEqual(status['gup_pin_warn.warns_on_purpose'],
                                 kr.FAILED)
                self.assertIn('unexpected console report: WARNING: CPU: 0',
                              problems[0])

    def test_declaration_does_not_cover_another_case(self):
        _r, problems, status = run(declared=[], splat2=WARN,
                                   decl1=declare('warns_on_purpose'))
        self.assertEqual(status['gup_pin_warn.warns_on_purpose'], kr.PASSED)
        self.assertEqual(status['gup_pin_warn.quiet_case'], kr.FAILED)
        self.assertEqual(len(problems), 1)
        self.assertTrue(problems[0].startswith(
            'gup_pin_warn.quiet_case: unexpected console report'))

    def test_declaration_naming_another_case_declares_nothing(self):
        _r, problems, status = run(declared=[], decl1=declare('quiet_case'))
        self.assertEqual(status['gup_pin_warn.warns_on_purpose'], kr.FAILED)
        self.assertEqual(status['gup_pin_warn.quiet_case'], kr.PASSED)

    def test_file_and_case_declarations_add_up(self):
        decl = declare('warns_on_purpose', 'try_grab_page')
        _r, problems, _s = run(decl1=decl)
        self.assertEqual(problems, [])
        other = WARN.replace('try_grab_page', 'try_get_folio')
        _r, problems, status = run(decl1=decl, splat1=other)
        self.assertEqual(status['gup_pin_warn.warns_on_purpose'], kr.FAILED)
        self.assertIn('"try_grab_page" did not appear', problems[0])

    def test_a_declaration_is_not_the_report_it_declares(self):
        """'Bad page state' matches anywhere in a line; the declaration
        line quoting it is no report, and does not make it appear."""
        decl = declare('warns_on_purpose', 'BUG: Bad page state')
        _r, problems, status = run(declared=[], splat1='', decl1=decl)
        self.assertEqual(status['gup_pin_warn.warns_on_purpose'], kr.FAILED)
        self.assertEqual(problems, [
            'gup_pin_warn.warns_on_purpose: declared console report '
            '"BUG: Bad page state" did not appear'])
        bad = 'BUG: Bad page state in process kunit_try_catch  pfn:0a1b2\n'
        _r, problems, _s = run(declared=[], splat1=bad, decl1=decl)
        self.assertEqual(problems, [])

    def test_parameter_declares_among_its_own_lines(self):
        text = PARAM_LOG.format(decl1='', decl2=declare('warns_by_order'),
                                splat1='', splat2=WARN)
        result = kr.parse_log(text)
        self.assertEqual(kr.apply_splats(result, text, []), [])
        text = PARAM_LOG.format(decl1=declare('warns_by_order'), decl2='',
                                splat1='', splat2=WARN)
        result = kr.parse_log(text)
        problems = kr.apply_splats(result, text, [])
        self.assertEqual([p.split(':')[0] for p in problems], [
            'gup_pin_warn.warns_by_order/order 0',
            'gup_pin_warn.warns_by_order/order 9'])

    def test_declarations_read_without_a_file(self):
        """--expect-splats without FILE: only the cases declare."""
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, 'kunit.log')
            with open(log, 'w') as f:
                f.write(LOG.format(before='', splat1=WARN, splat2='',
                                   after='', decl2='',
                                   decl1=declare('warns_on_purpose')))
            with contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()):
                self.assertEqual(kr.main([log, '--expect-splats']), 0)
                self.assertEqual(kr.main([log, '--expect-splats',
                                          os.devnull]), 0)

    def test_case_declarations_parsing(self):
        lines = ['    # a: start', declare('a', 'WARNING:  ').rstrip('\n'),
                 '    # b: expected report: BUG:', '    # a: expected report:',
                 '        # a: expected report: kernel BUG at mm/gup.c']
        self.assertEqual(kr.case_declarations(lines, 'a'),
                         ['WARNING:', 'kernel BUG at mm/gup.c'])
        self.assertEqual(kr.case_declarations(lines, 'b'), ['BUG:'])


PARAM_LOG = """KTAP version 1
1..1
    KTAP version 1
    # Subtest: gup_pin_warn
    1..1
        KTAP version 1
        # Subtest: warns_by_order
    # warns_by_order: start
{decl1}{splat1}        ok 1 order 0
    # warns_by_order: start
{decl2}{splat2}        ok 2 order 9
    # warns_by_order: pass:2 fail:0 skip:0 total:2
    ok 1 warns_by_order
ok 1 gup_pin_warn
"""


sys.path.insert(0, os.path.dirname(HERE))
from tests import fakes  # noqa: E402

KTAP = str(fakes.ktap_fixtures())


def real(name, declared=()):
    """Parse a real log of fixtures/ktap and apply the splat rules."""
    with open(os.path.join(KTAP, name), encoding='utf-8',
              errors='replace') as f:
        text = f.read()
    result = kr.parse_log(text, name)
    problems = kr.apply_splats(result, text, list(declared))
    return text, result, problems


class RealLogs(unittest.TestCase):
    """The rules on real consoles of both trees (fixtures/ktap)."""

    def test_cases_declare_every_report_they_provoke(self):
        for tree in ('6.1', '6.12'):
            for what in ('warn-pass', 'grab-params', 'bare-skips'):
                name = f'{tree}-{what}.log'
                with self.subTest(fixture=name):
                    text, result, problems = real(name)
                    self.assertIn(': expected report: WARNING:', text)
                    self.assertIn('\nWARNING: CPU: ', text)
                    self.assertEqual(problems, [])
                    self.assertEqual(result.exit_status(), 0)

    def test_without_the_declarations_the_reports_fail(self):
        for tree in ('6.1', '6.12'):
            with self.subTest(tree=tree):
                text, _r, _p = real(f'{tree}-warn-pass.log')
                text = '\n'.join(line for line in text.splitlines()
                                 if 'expected report' not in line)
                result = kr.parse_log(text)
                problems = kr.apply_splats(result, text, [])
                self.assertEqual(len(problems), 3)
                self.assertEqual(result.counts().failed, 3)

    def test_undeclared_warning_in_a_real_case(self):
        """060 lets reclaim strip the buffers of a pinned ext4 page: the
        pinning case then WARNs in ext4_dirty_folio() undeclared, while
        the get_user_pages() case declares both of its reports."""
        for tree in ('6.1', '6.12'):
            with self.subTest(tree=tree):
                _t, result, problems = real(f'{tree}-mutant-060-fails.log')
                self.assertEqual(len(problems), 1)
                self.assertRegex(problems[0], r'^gup_pin_ext4_dma\.pin_user_'
                                 r'pages_keeps_dma_across_reclaim: unexpected'
                                 r' console report: WARNING: .* '
                                 r'ext4_dirty_folio')
                gup = [leaf for leaf in result.leaves() if leaf.name ==
                       'get_user_pages_loses_dma_once_reclaim_strips_buffers']
                self.assertEqual(kr.case_declarations(
                    gup[0].diagnostics, gup[0].name),
                    ['ext4_dirty_folio', 'does not have buffers attached'])
                self.assertEqual(gup[0].status, kr.PASSED)

    def test_file_declarations_of_a_log_before_the_cases_declared(self):
        """6.12's mutant logs predate the cases' own declarations: the
        files of that time (fixtures/ktap/6.12-expected-splats) cover
        their WARNs, and only the crash's BUG line is left."""
        declared = kr.read_splats(os.path.join(KTAP, '6.12-expected-splats'))
        text, _r, problems = real('6.12-mutant-148-fails-params.log')
        self.assertNotIn('expected report', text)
        self.assertEqual(len(problems), 17)
        _t, _r, problems = real('6.12-mutant-148-fails-params.log',
                                declared)
        self.assertEqual(problems, [])
        _t, _r, problems = real('6.12-mutant-crash-in-param.log', declared)
        self.assertEqual(problems, [
            'gup_pin_memfd.memfd_pin_folios_pins_each_folio_of_range_once/'
            '<param 6>: unexpected console report: BUG: kernel NULL '
            'pointer dereference, address: 0000000000000034'])


class SeveralFiles(unittest.TestCase):
    """--expect-splats is repeatable: kunit/expected-splats and a tree's
    kunit/TREE/expected-splats both declare."""

    def run_main(self, *files):
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, 'kunit.log')
            with open(log, 'w') as f:
                f.write(LOG.format(before='', splat1=WARN, splat2=WARN,
                                   after='', decl1='', decl2=''))
            args = [log]
            for n, text in enumerate(files):
                path = os.path.join(d, 'splats%d' % n)
                with open(path, 'w') as f:
                    f.write(text)
                args += ['--expect-splats', path]
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), \
                    contextlib.redirect_stderr(err):
                status = kr.main(args)
        return status, out.getvalue().splitlines()[-1]

    def test_declarations_of_every_file_count(self):
        shared = '# shared\ngup_pin_warn.warns_on_purpose WARNING:\n'
        tree = '# this tree\ngup_pin_warn.quiet_case WARNING:\n'
        self.assertEqual(self.run_main(shared),
                         (1, '1 passed, 1 failed, 0 skipped'))
        self.assertEqual(self.run_main(shared, tree),
                         (0, '2 passed, 0 failed, 0 skipped'))


class ReadSplats(unittest.TestCase):
    def test_comments_and_globs(self):
        kunit = os.path.join(HERE, '..', '..', 'kunit')
        paths = [os.path.join(kunit, 'expected-splats')] + [
            os.path.join(kunit, d, 'expected-splats')
            for d in sorted(os.listdir(kunit))
            if os.path.isfile(os.path.join(kunit, d, 'expected-splats'))]
        self.assertTrue(paths)
        for path in paths:
            # May be empty: the cases declare what they provoke; a file
            # keeps what a case cannot declare itself.
            entries = kr.read_splats(path)
            self.assertTrue(all(glob and text for glob, text in entries),
                            path)

    def test_lines_split_at_the_first_blank(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'expected-splats')
            with open(path, 'w') as f:
                f.write('# comment\n\ngup_pin_x.case/*  BUG: Bad page state\n')
            self.assertEqual(kr.read_splats(path),
                             [('gup_pin_x.case/*', 'BUG: Bad page state')])


if __name__ == '__main__':
    unittest.main()
