"""pytest's ``-m``/``-k`` match-expression grammar, checked before an expression reaches
pytest's argv (``check_expression``).

The grammar is pytest's own (``_pytest/mark/expression.py``, pytest 8.3-9.x)::

    expression: expr? EOF
    expr:       and_expr ('or' and_expr)*
    and_expr:   not_expr ('and' not_expr)*
    not_expr:   'not' not_expr | '(' expr ')' | ident kwargs?
    ident:      (\\w|:|\\+|-|\\.|\\[|\\]|\\\\|/)+
    kwargs:     ('(' name '=' value ( ', ' name '=' value )*  ')')
    value:      (unescaped) string literal | (-)?[0-9]+ | 'False' | 'True' | 'None'

A property test (``tests/server/test_server_units.py``) checks that ``-m`` expressions are
accepted exactly when pytest's own parser accepts them.
"""

from __future__ import annotations

import keyword
import re

from pytest_mcp_server.domain.validation import check_plain_text

_IDENT = re.compile(r"(:?\w|:|\+|-|\.|\[|\]|\\|/)+")

Token = tuple[str, str, int]
"""(kind, text, column index): kind is ``ident``, ``string``, ``or``/``and``/``not``,
one of ``()=,``, or ``eof``."""


def _lex(expr: str) -> list[Token]:
    tokens: list[Token] = []
    pos = 0
    while pos < len(expr):
        ch = expr[pos]
        if ch in " \t":
            pos += 1
        elif ch in "()=,":
            tokens.append((ch, ch, pos))
            pos += 1
        elif ch in "'\"":
            end = expr.find(ch, pos + 1)
            if end == -1:
                raise ValueError(f"closing quote {ch} is missing (column {pos + 1})")
            value = expr[pos : end + 1]
            if "\\" in value:
                raise ValueError(f"escaping with '\\' is not supported (column {pos + value.index(chr(92)) + 1})")
            tokens.append(("string", value, pos))
            pos = end + 1
        else:
            m = _IDENT.match(expr, pos)
            if not m:
                raise ValueError(f"unexpected character {ch!r} (column {pos + 1})")
            word = m.group(0)
            tokens.append((word if word in ("or", "and", "not") else "ident", word, pos))
            pos = m.end()
    tokens.append(("eof", "", pos))
    return tokens


class _ExprParser:
    """A recursive-descent recogniser of the grammar above; raises ``ValueError``."""

    def __init__(self, expr: str, allow_kwargs: bool) -> None:
        self.tokens = _lex(expr)
        self.i = 0
        self.allow_kwargs = allow_kwargs

    def peek(self) -> Token:
        return self.tokens[self.i]

    def accept(self, kind: str) -> Token | None:
        tok = self.tokens[self.i]
        if tok[0] == kind:
            if kind != "eof":
                self.i += 1
            return tok
        return None

    def expect(self, kind: str, label: str) -> Token:
        tok = self.accept(kind)
        if tok is None:
            got = self.peek()
            raise ValueError(f"expected {label}, got {got[1] or 'end of input'!r} (column {got[2] + 1})")
        return tok

    def parse(self) -> None:
        if self.accept("eof"):
            return
        self.expr()
        self.expect("eof", "end of input")

    def expr(self) -> None:
        self.and_expr()
        while self.accept("or"):
            self.and_expr()

    def and_expr(self) -> None:
        self.not_expr()
        while self.accept("and"):
            self.not_expr()

    def not_expr(self) -> None:
        if self.accept("not"):
            self.not_expr()
            return
        if self.accept("("):
            self.expr()
            self.expect(")", "')'")
            return
        if self.accept("ident"):
            if self.peek()[0] == "(":
                if not self.allow_kwargs:
                    raise ValueError(f"keyword expressions take no arguments (column {self.peek()[2] + 1})")
                self.accept("(")
                self.kwarg()
                while self.accept(","):
                    self.kwarg()
                self.expect(")", "')'")
            return
        got = self.peek()
        raise ValueError(f"expected 'not', '(' or a name, got {got[1] or 'end of input'!r} (column {got[2] + 1})")

    def kwarg(self) -> None:
        name = self.expect("ident", "an argument name")
        if not name[1].isidentifier() or keyword.iskeyword(name[1]):
            raise ValueError(f"{name[1]!r} is not a valid argument name (column {name[2] + 1})")
        self.expect("=", "'='")
        if self.accept("string"):
            return
        value = self.expect("ident", "a value")
        v = value[1]
        if not (v.isdigit() or (v.startswith("-") and v[1:].isdigit()) or v in ("True", "False", "None")):
            raise ValueError(f"{v!r} is not a string, integer, True, False or None (column {value[2] + 1})")


def check_expression(expr: str, *, markers: bool) -> str:
    """Check a ``-m`` (``markers=True``) or ``-k`` expression against pytest's grammar.

    Names, ``and``/``or``/``not``, parentheses; ``-m`` names may take keyword arguments
    (``slow(reason="x")``). Also refused: control characters, a leading ``-`` or ``@``
    (pytest would read an option; wrap the name in parentheses: ``(-x)``).
    Returns the stripped expression; raises ``ValueError`` with the reason and column.
    """
    check_plain_text(expr.replace("\t", " "), "expression")
    stripped = expr.strip(" \t")
    if stripped[:1] in ("-", "@"):
        raise ValueError(
            f"starts with {stripped[0]!r}, which pytest would read as an option; write ({stripped}) instead"
        )
    _ExprParser(stripped, allow_kwargs=markers).parse()
    return stripped
