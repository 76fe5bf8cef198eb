"""Tests of tools/_testenv.py and tools/reviewer.py's verdict: the
documented run of mm/tests/.kunitconfig, and the skip reasons that must
agree with it."""
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..'))
import _testenv  # noqa: E402
import ktap_report  # noqa: E402
import reviewer  # noqa: E402

KUNIT = os.path.join(HERE, '..', '..', 'kunit')
KUNITCONFIG = os.path.join(KUNIT, 'common', _testenv.KUNITCONFIG)
HEADER = os.path.join(KUNIT, 'common', 'mm', 'tests', 'gup_kunit.h')

SAMPLE = """# intro
#
#   ./tools/testing/kunit/kunit.py run --arch=x86_64 --kunitconfig=mm/tests
#
#   mkfs.ext4 -q -b 4096 gup-ext4.img 32M
#   ./tools/testing/kunit/kunit.py run --arch=x86_64 --kunitconfig=mm/tests \\
#\t--kernel_args='hugepages=16 movablecore=512M memmap=2M!1G' \\
#\t--qemu_args='-smp 2 -drive file=gup-ext4.img,if=virtio,format=raw'
CONFIG_KUNIT=y
"""


def documented():
    with open(KUNITCONFIG) as f:
        return _testenv.Documented(f.read())


class Parse(unittest.TestCase):
    def test_sample(self):
        d = _testenv.Documented(SAMPLE)
        self.assertEqual(d.bare, './tools/testing/kunit/kunit.py run '
                         '--arch=x86_64 --kunitconfig=mm/tests')
        self.assertEqual(d.mkfs, 'mkfs.ext4 -q -b 4096 gup-ext4.img 32M')
        self.assertEqual(d.kernel_args, ['hugepages=16', 'movablecore=512M',
                                         'memmap=2M!1G'])
        self.assertEqual(d.qemu_args, ['-smp', '2', '-drive',
                                       'file=gup-ext4.img,if=virtio,'
                                       'format=raw'])
        self.assertIn('--kernel_args=', d.full)

    def test_disk_replaced_or_dropped(self):
        d = _testenv.Documented(SAMPLE)
        self.assertEqual(d.qemu_args_with_disk('/b/x,y.img'),
                         ['-smp', '2', '-drive',
                          'file=/b/x,,y.img,if=virtio,format=raw'])
        self.assertEqual(d.qemu_args_with_disk(''), ['-smp', '2'])

    def test_missing_lines_are_an_error(self):
        with self.assertRaisesRegex(_testenv.TestEnvError,
                                    'two kunit.py run lines'):
            _testenv.Documented(SAMPLE.replace('mkfs.ext4', 'mke2fs'))
        text = SAMPLE.replace("--kernel_args='hugepages=16 movablecore=512M "
                              "memmap=2M!1G' \\\n#\t", '')
        with self.assertRaisesRegex(_testenv.TestEnvError,
                                    'no --kernel_args='):
            _testenv.Documented(text)

    def test_an_extra_option_of_the_full_run_is_an_error(self):
        text = SAMPLE.replace("--qemu_args=", "--timeout=9 --qemu_args=")
        with self.assertRaisesRegex(_testenv.TestEnvError, '--timeout=9'):
            _testenv.Documented(text)

    def test_skip_arguments(self):
        self.assertEqual(_testenv.skip_arguments(
            "needs two CPUs: pass --qemu_args='-smp 2' and "
            "pass --kernel_args=hugepages=16"),
            [('qemu_args', ['-smp', '2']),
             ('kernel_args', ['hugepages=16'])])
        self.assertEqual(_testenv.skip_arguments('needs swap'), [])


class TheSeries(unittest.TestCase):
    """The .kunitconfig of the series and the C skip reasons agree."""

    def test_the_series_documents_a_run(self):
        d = documented()
        self.assertIn('movablecore=512M', d.kernel_args)
        self.assertIn('-drive', d.qemu_args)
        self.assertIn(_testenv.DOCUMENTED_IMAGE, d.mkfs)

    def test_every_reason_of_the_header_asks_for_a_documented_argument(self):
        with open(HEADER) as f:
            text = f.read()
        strings = ' '.join(re.findall(r'"([^"]*)"', text))
        asked = _testenv.skip_arguments(strings)
        self.assertGreaterEqual(len(asked), 5)
        allowed = documented().arguments()
        for kind, words in asked:
            for w in words:
                self.assertIn(w, allowed, '%s asks for %s' % (kind, w))

    def test_a_reason_asking_for_another_value_is_caught(self):
        d = documented()
        text = ('KTAP version 1\n1..1\n    KTAP version 1\n'
                '    # Subtest: s\n    1..1\n'
                '    ok 1 c # SKIP needs a hugetlb pool: pass '
                '--kernel_args=hugepages=99\nok 1 s\n')
        out = reviewer.evaluate(ktap_report.parse_log(text), d)
        self.assertEqual(out['skipped'], 1)
        self.assertEqual(len(out['problems']), 1)
        self.assertIn('hugepages=99', out['problems'][0])


class Verdict(unittest.TestCase):
    def result(self, lines):
        body = ''.join('    %s\n' % ln for ln in lines)
        return ktap_report.parse_log(
            'KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: s\n'
            '    1..%d\n%sok 1 s\n' % (len(lines), body))

    def test_a_skip_without_needs_fails(self):
        out = reviewer.evaluate(self.result(['ok 1 a # SKIP no pool']),
                                documented())
        self.assertIn('does not say what it needs', out['problems'][0])

    def test_the_documented_run_may_skip_only_the_swap_case(self):
        d = documented()
        ok = reviewer.evaluate(
            self.result(['ok 1 a', 'ok 2 b # SKIP needs x']), d)
        self.assertEqual(ok['problems'], [])
        out = reviewer.evaluate(
            self.result(['ok 1 a', 'ok 2 b # SKIP needs x']), d,
            documented=True)
        self.assertIn('skipped in the documented run', out['problems'][0])
        text = ('KTAP version 1\n1..1\n    KTAP version 1\n'
                '    # Subtest: gup_pin_user\n    1..1\n'
                '    ok 1 pageout_does_not_swap_pinned_anon_page # SKIP '
                'needs swap space\nok 1 gup_pin_user\n')
        out = reviewer.evaluate(ktap_report.parse_log(text), d,
                                documented=True)
        self.assertEqual(out['problems'], [])

    def test_the_documented_run_may_skip_the_pageout_race(self):
        text = ('KTAP version 1\n1..1\n    KTAP version 1\n'
                '    # Subtest: gup_pin_race\n    1..1\n'
                '        KTAP version 1\n'
                '        # Subtest: pin_during_pageout_keeps_device_writes\n'
                '        1..2\n'
                '        ok 1 GUP-fast # SKIP needs swap space\n'
                '        ok 2 slow path # SKIP needs swap space\n'
                '    ok 1 pin_during_pageout_keeps_device_writes\n'
                'ok 1 gup_pin_race\n')
        out = reviewer.evaluate(ktap_report.parse_log(text), documented(),
                                documented=True)
        self.assertEqual(out['skipped'], 2)
        self.assertEqual(out['problems'], [])

    def test_a_failure_or_a_crash_fails(self):
        d = documented()
        out = reviewer.evaluate(self.result(['not ok 1 a']), d)
        self.assertEqual(out['failed'], 1)
        self.assertTrue(out['problems'])
        crashed = ktap_report.parse_log(
            'KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: s\n'
            '    1..3\n    ok 1 a\nKernel panic - not syncing: x\n')
        out = reviewer.evaluate(crashed, d)
        self.assertTrue(out['crashed'])
        self.assertTrue(any('crashed' in p for p in out['problems']))

    def test_harness_arguments_are_allowed_only_when_given(self):
        d = documented()
        res = self.result(['ok 1 a # SKIP needs secretmem: pass '
                           '--kernel_args=secretmem.enable=1'])
        self.assertTrue(reviewer.evaluate(res, d)['problems'])
        self.assertEqual(reviewer.evaluate(
            res, d, harness=_testenv.HARNESS_KERNEL_ARGS)['problems'], [])


if __name__ == '__main__':
    unittest.main()
