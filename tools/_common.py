"""Shared helpers of the gup-pin-kunit tools (standard library only).

Every tool reports bad input as one line on stderr, prefixed with its name,
and exits non-zero; nothing here prints a traceback for expected failures.
"""
import fcntl
import os
import signal
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get('GPK_BUILD', os.path.join(ROOT, 'build'))
TREE = os.path.join(BUILD, 'linux')
KBUILD_DIR = os.path.join(BUILD, 'kunit-x86_64')
RESULTS = os.environ.get('GPK_RESULTS', os.path.join(ROOT, 'results'))
STATE = os.path.join(TREE, '.git', 'gup-pin-kunit.json')


class ToolError(Exception):
    """An expected failure: reported as one line, exit status 1."""


def die(tool, msg, status=1):
    """Print one line 'tool: msg' on stderr and exit."""
    print('%s: %s' % (tool, msg), file=sys.stderr)
    sys.exit(status)


def interrupt_on_sigterm():
    """Take SIGTERM (a CI job's timeout, kill) like Ctrl-C: raise
    KeyboardInterrupt, so that the cleanup that Ctrl-C gets (stop the
    build, restore a mutated tree, release the lock) runs for it too."""
    def handler(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, handler)


def run(cmd, cwd=None, check=True, capture=True, timeout=None, env=None):
    """Run a command; return CompletedProcess. Raise ToolError on failure."""
    try:
        proc = subprocess.run(cmd, cwd=cwd, text=True, timeout=timeout,
                              env=env, errors='backslashreplace',
                              stdout=subprocess.PIPE if capture else None,
                              stderr=subprocess.STDOUT if capture else None)
    except FileNotFoundError:
        raise ToolError('command not found: %s' % cmd[0])
    except subprocess.TimeoutExpired:
        raise ToolError('timed out after %ss: %s' % (timeout, ' '.join(cmd)))
    if check and proc.returncode != 0:
        out = (proc.stdout or '').strip().splitlines()
        last = out[-1] if out else 'no output'
        raise ToolError('%s failed (exit %d): %s'
                        % (' '.join(cmd[:3]), proc.returncode, last))
    return proc


class BuildLock:
    """Exclusive lock on build/ so that two runs never share a tree.

    A second run waits (up to GPK_LOCK_WAIT seconds, default 3600) and
    then refuses. Nested tools see GPK_LOCK_HELD and do not lock again.
    """

    def __init__(self, tool):
        self.tool = tool
        self.fd = None

    def __enter__(self):
        if os.environ.get('GPK_LOCK_HELD') == str(os.getppid()) or \
           os.environ.get('GPK_LOCK_HELD') == 'inherit':
            return self
        os.makedirs(BUILD, exist_ok=True)
        self.fd = os.open(os.path.join(BUILD, '.lock'),
                          os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            wait = int(os.environ.get('GPK_LOCK_WAIT', '3600'))
            print('%s: another run holds build/.lock; waiting up to %ds'
                  % (self.tool, wait), file=sys.stderr)

            def expired(_sig, _frm):
                raise TimeoutError()
            old = signal.signal(signal.SIGALRM, expired)
            signal.alarm(max(wait, 1))
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX)
            except TimeoutError:
                die(self.tool, 'build/ is locked by another run '
                    '(still busy after %ds); not touching it' % wait)
            finally:
                signal.alarm(0)
                signal.signal(signal.SIGALRM, old)
        os.environ['GPK_LOCK_HELD'] = 'inherit'
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.environ.pop('GPK_LOCK_HELD', None)
            os.close(self.fd)
        return False
