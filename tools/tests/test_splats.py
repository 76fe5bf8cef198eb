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
{splat1}    ok 1 warns_on_purpose
    # quiet_case: start
{splat2}    ok 2 quiet_case
# gup_pin_warn: pass:2 fail:0 skip:0 total:2
ok 1 gup_pin_warn
{after}reboot: Restarting system
"""

WARN = "WARNING: CPU: 0 PID: 1 at mm/gup.c:224 try_grab_page+0xc8/0x110\n"
DECLARED = [('gup_pin_warn.warns_on_purpose', 'WARNING:')]


def run(declared=DECLARED, before='', splat1=WARN, splat2='', after=''):
    text = LOG.format(before=before, splat1=splat1, splat2=splat2,
                      after=after)
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


class SeveralFiles(unittest.TestCase):
    """--expect-splats is repeatable: kunit/expected-splats and a tree's
    kunit/TREE/expected-splats both declare."""

    def run_main(self, *files):
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, 'kunit.log')
            with open(log, 'w') as f:
                f.write(LOG.format(before='', splat1=WARN, splat2=WARN,
                                   after=''))
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
        for path in paths:
            entries = kr.read_splats(path)
            self.assertTrue(entries, path)
            self.assertTrue(all(text for _glob, text in entries), path)


if __name__ == '__main__':
    unittest.main()
