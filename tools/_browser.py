"""Headless Chromium, driven over the DevTools protocol on a pipe
(standard library only): open a page, evaluate JavaScript in it, take a
screenshot, and tell which URLs it requested.

Chromium (Debian's `chromium`) starts with --remote-debugging-pipe: it
reads the protocol's JSON messages, each ended by a NUL byte, on its file
descriptor 3 and writes its own on 4. No port, no websocket, nothing to
install beyond the browser. Used by `make check`'s report step
(tools/report.py check_page()).
"""
from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from typing import Any, Dict, List, Optional

from _common import ToolError

BROWSERS = ('chromium', 'chromium-browser')


def find_browser() -> str:
    """The path of Debian's chromium; ToolError if it is not installed."""
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    raise ToolError('chromium is not installed (Debian package chromium; '
                    'as root: sh tools/deps)')


class Browser:
    """One headless Chromium with one page; a context manager.

    open(url) loads a page and waits for its load event; evaluate(js)
    returns the value of an expression (awaiting a promise); wait_for(js)
    polls an expression until it is true; screenshot(path) writes a PNG;
    requests lists every URL the page asked for.
    """

    def __init__(self, width: int = 1280, height: int = 1600,
                 timeout: float = 30.0) -> None:
        self.width, self.height, self.timeout = width, height, timeout
        self.proc: Optional[subprocess.Popen] = None
        self.session: Optional[str] = None
        self.requests: List[str] = []
        self.errors: List[str] = []
        self._id = 0
        self._buf = b''
        self._profile = ''
        self._events: List[Dict[str, Any]] = []

    def __enter__(self) -> 'Browser':
        exe = find_browser()
        self._profile = tempfile.mkdtemp(prefix='gpk-chromium-')
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        # Above 10, so that placing them on 3 and 4 clobbers neither.
        hi_r = fcntl.fcntl(to_r, fcntl.F_DUPFD, 10)
        hi_w = fcntl.fcntl(from_w, fcntl.F_DUPFD, 10)
        for fd in (to_r, from_w):
            os.close(fd)

        def child_fds() -> None:
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        cmd = [exe, '--headless', '--no-sandbox', '--disable-gpu',
               '--remote-debugging-pipe', '--no-first-run',
               '--no-default-browser-check', '--disable-extensions',
               '--disable-background-networking', '--disable-sync',
               '--hide-scrollbars', '--mute-audio',
               '--user-data-dir=' + self._profile,
               '--window-size=%d,%d' % (self.width, self.height),
               'about:blank']
        try:
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, preexec_fn=child_fds,
                pass_fds=(3, 4, hi_r, hi_w))
        except OSError as e:
            raise ToolError('cannot start %s: %s' % (exe, e.strerror))
        finally:
            os.close(hi_r)
            os.close(hi_w)
        self._out, self._in = to_w, from_r
        try:
            self._attach()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.proc is not None:
            try:
                self._send('Browser.close', session=False, wait=False)
            except (ToolError, OSError):
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
            for fd in (self._out, self._in):
                try:
                    os.close(fd)
                except OSError:
                    pass
        if self._profile:
            shutil.rmtree(self._profile, ignore_errors=True)
            self._profile = ''

    # ------------------------------------------------------------ protocol

    def _read_message(self, deadline: float) -> Dict[str, Any]:
        while b'\0' not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ToolError('chromium did not answer within %.0fs'
                                % self.timeout)
            ready, _w, _x = select.select([self._in], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                raise ToolError('chromium exited (status %s)'
                                % (self.proc.poll() if self.proc else '?'))
            self._buf += chunk
        msg, self._buf = self._buf.split(b'\0', 1)
        return json.loads(msg)

    def _event(self, msg: Dict[str, Any]) -> None:
        method = msg.get('method')
        params = msg.get('params') or {}
        if method == 'Network.requestWillBeSent':
            self.requests.append(params.get('request', {}).get('url', ''))
        elif method == 'Runtime.exceptionThrown':
            det = params.get('exceptionDetails') or {}
            exc = det.get('exception') or {}
            self.errors.append(exc.get('description') or det.get('text')
                               or 'exception')
        elif method == 'Log.entryAdded':
            entry = params.get('entry') or {}
            if entry.get('level') == 'error':
                self.errors.append(entry.get('text', ''))
        self._events.append(msg)

    def _send(self, method: str, params: Optional[Dict[str, Any]] = None,
              session: bool = True, wait: bool = True) -> Dict[str, Any]:
        self._id += 1
        msg: Dict[str, Any] = {'id': self._id, 'method': method,
                               'params': params or {}}
        if session and self.session:
            msg['sessionId'] = self.session
        os.write(self._out, json.dumps(msg).encode() + b'\0')
        if not wait:
            return {}
        deadline = time.monotonic() + self.timeout
        while True:
            got = self._read_message(deadline)
            if got.get('id') == self._id:
                if 'error' in got:
                    raise ToolError('chromium: %s: %s' % (
                        method, got['error'].get('message', got['error'])))
                return got.get('result') or {}
            self._event(got)

    def _attach(self) -> None:
        self._events = []
        targets = self._send('Target.getTargets', session=False)
        pages = [t for t in targets.get('targetInfos', [])
                 if t.get('type') == 'page']
        if pages:
            target = pages[0]['targetId']
        else:
            target = self._send('Target.createTarget', {'url': 'about:blank'},
                                session=False)['targetId']
        self.session = self._send('Target.attachToTarget',
                                  {'targetId': target, 'flatten': True},
                                  session=False)['sessionId']
        for domain in ('Page', 'Runtime', 'Network', 'Log'):
            self._send(domain + '.enable')
        self._send('Emulation.setDeviceMetricsOverride',
                   {'width': self.width, 'height': self.height,
                    'deviceScaleFactor': 1, 'mobile': False})

    # ------------------------------------------------------------ the page

    def open(self, url: str) -> None:
        """Load url and wait for its load event."""
        self._events = []
        got = self._send('Page.navigate', {'url': url})
        if got.get('errorText'):
            raise ToolError('chromium cannot open %s: %s'
                            % (url, got['errorText']))
        deadline = time.monotonic() + self.timeout
        while not any(e.get('method') == 'Page.loadEventFired'
                      for e in self._events):
            self._event(self._read_message(deadline))

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (a promise is
        awaited); ToolError if it throws."""
        got = self._send('Runtime.evaluate',
                         {'expression': expression, 'returnByValue': True,
                          'awaitPromise': True})
        if 'exceptionDetails' in got:
            det = got['exceptionDetails']
            raise ToolError('JavaScript error: %s' % (
                (det.get('exception') or {}).get('description') or
                det.get('text')))
        return (got.get('result') or {}).get('value')

    def wait_for(self, expression: str, what: str,
                 timeout: Optional[float] = None) -> Any:
        """Poll expression until its value is truthy; return it. ToolError
        naming what after timeout seconds (default the browser's)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise ToolError('%s: not there after %.0fs'
                                % (what, timeout or self.timeout))
            time.sleep(0.2)

    def screenshot(self, path: str, full_page: bool = False) -> None:
        """Write a PNG of the page's viewport (or, full_page, of its whole
        height) to path."""
        params: Dict[str, Any] = {'format': 'png'}
        if full_page:
            size = self._send('Page.getLayoutMetrics')
            css = size.get('cssContentSize') or size.get('contentSize') or {}
            params['clip'] = {'x': 0, 'y': 0, 'width': self.width,
                              'height': min(css.get('height', 16000), 16000),
                              'scale': 1}
            params['captureBeyondViewport'] = True
        data = self._send('Page.captureScreenshot', params)['data']
        tmp = path + '.tmp'
        with open(tmp, 'wb') as f:
            f.write(base64.b64decode(data))
        os.replace(tmp, path)
