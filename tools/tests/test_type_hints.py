# SPDX-License-Identifier: GPL-2.0
"""Every public function of the tools says its types, for make check's
mypy step to check: module-level functions and methods of public classes
whose names do not start with an underscore, in tools/*.py."""

import ast
import unittest
from pathlib import Path

TOOLS = Path(__file__).resolve().parent.parent


def untyped(source):
    """[(line, name)] of the public functions of source (a module's text)
    that lack a return annotation or an annotation of a parameter (self
    and cls aside)."""
    out = []

    def walk(body, prefix=''):
        for node in body:
            if isinstance(node, ast.ClassDef) and \
                    not node.name.startswith('_'):
                walk(node.body, prefix + node.name + '.')
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                    and not node.name.startswith('_'):
                a = node.args
                params = [p for p in a.posonlyargs + a.args + a.kwonlyargs
                          if p.arg not in ('self', 'cls')]
                params += [p for p in (a.vararg, a.kwarg) if p]
                if node.returns is None or \
                        any(p.annotation is None for p in params):
                    out.append((node.lineno, prefix + node.name))
    walk(ast.parse(source).body)
    return out


class TypeHints(unittest.TestCase):
    def test_every_public_function_is_typed(self):
        missing = ['%s:%d %s()' % (path.name, line, name)
                   for path in sorted(TOOLS.glob('*.py'))
                   for line, name in untyped(path.read_text())]
        self.assertEqual(missing, [], 'public functions without type hints')

    def test_an_untyped_function_is_found(self):
        self.assertEqual(untyped('def f(a: int):\n    pass\n'
                                 'def g(a) -> None:\n    pass\n'
                                 'def _h(a):\n    pass\n'
                                 'class C:\n'
                                 '    def m(self, *args) -> None:\n'
                                 '        pass\n'),
                         [(1, 'f'), (3, 'g'), (8, 'C.m')])
        self.assertEqual(untyped('def f(a: int, *b: str) -> int:\n'
                                 '    return a\n'), [])


if __name__ == '__main__':
    unittest.main()
