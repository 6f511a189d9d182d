"""Seeded bug injection: small AST-located source mutations inside library functions.

Each candidate changes one token range on one line (a comparison flipped at its boundary,
an arithmetic or boolean operator swapped, an integer constant moved by one, a condition
negated, a returned boolean or the branches of a conditional expression swapped), so the
real fix is a one-line ``str_replace`` and the diff stays readable. Whether a mutation is
a *bug* is decided by running the repository's tests (see ``env.py``), never assumed.
"""

from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

COMPARE_FLIPS = {
    ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="), ast.NotEq: ("!=", "=="), ast.In: ("in", "not in"), ast.NotIn: ("not in", "in"),
    ast.Is: ("is", "is not"), ast.IsNot: ("is not", "is"),
}
BINOP_SWAPS = {
    ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "+"), ast.FloorDiv: ("//", "*"),
    ast.Mod: ("%", "//"), ast.BitAnd: ("&", "|"), ast.BitOr: ("|", "&"),
}
BOOLOP_SWAPS = {ast.And: ("and", "or"), ast.Or: ("or", "and")}


@dataclass(frozen=True)
class Mutation:
    """One injected change: where it is, what the line was and what it becomes."""

    file: str
    """Repository-relative path of the mutated module."""
    line: int
    """1-based line number of the change."""
    kind: str
    """``compare``, ``arith``, ``boolop``, ``off_by_one``, ``negate``, ``return_bool``, ``ifexp``."""
    original_line: str
    mutated_line: str
    function: str
    """Name of the enclosing function (for ``grep``)."""
    function_start: int
    function_end: int

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}:{self.kind}:{self.mutated_line.strip()}"

    @property
    def description(self) -> str:
        return f"{self.kind} in {self.function}() at {self.file}:{self.line}"


class _Finder(ast.NodeVisitor):
    def __init__(self, lines: list[bytes], rel: str):
        self.lines, self.rel = lines, rel
        self.stack: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        self.found: list[Mutation] = []

    # Only code inside functions: module and class bodies are mostly definitions.
    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.name in {"__repr__", "__str__"}:
            return
        self.stack.append(node)
        for child in node.body:
            self.visit(child)
        self.stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def _emit(self, kind: str, lineno: int, start: int, end: int, new: str) -> None:
        if not self.stack:
            return
        fn = self.stack[-1]
        raw = self.lines[lineno - 1]
        mutated = raw[:start] + new.encode() + raw[end:]
        if mutated == raw:
            return
        self.found.append(Mutation(
            file=self.rel, line=lineno, kind=kind, original_line=raw.decode(), mutated_line=mutated.decode(),
            function=fn.name, function_start=fn.lineno, function_end=fn.end_lineno or fn.lineno,
        ))

    def _gap_token(self, left: ast.AST, right: ast.AST, token: str, kind: str, new: str) -> None:
        """Replace ``token`` found alone in the source gap between two nodes on one line."""
        if left.end_lineno != right.lineno:
            return
        raw = self.lines[right.lineno - 1]
        gap = raw[left.end_col_offset:right.col_offset].decode(errors="replace")
        pattern = rf"(?<![\w=<>!*/%&|+-]){re.escape(token)}(?![\w=<>*/%&|])".replace(r"\ ", r"\s+")
        hits = list(re.finditer(pattern, gap))
        if len(hits) == 1:
            base = left.end_col_offset  # type: ignore[operator]
            self._emit(kind, right.lineno, base + hits[0].start(), base + hits[0].end(), new)

    def visit_Compare(self, node: ast.Compare) -> None:
        left: ast.AST = node.left
        for op, right in zip(node.ops, node.comparators, strict=True):
            if type(op) in COMPARE_FLIPS:
                old, new = COMPARE_FLIPS[type(op)]
                self._gap_token(left, right, old, "compare", new)
            left = right
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if type(node.op) in BINOP_SWAPS and not _is_string(node.left):
            old, new = BINOP_SWAPS[type(node.op)]
            self._gap_token(node.left, node.right, old, "arith", new)
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        old, new = BOOLOP_SWAPS[type(node.op)]
        for a, b in pairwise(node.values):
            self._gap_token(a, b, old, "boolop", new)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        value = node.value
        if type(value) is int and 0 <= value <= 8 and node.lineno == node.end_lineno:
            self._emit("off_by_one", node.lineno, node.col_offset, node.end_col_offset or 0, str(value + 1))

    def visit_If(self, node: ast.If) -> None:
        self._negate(node.test)
        self.generic_visit(node)

    visit_While = visit_If  # type: ignore[assignment]

    def _negate(self, test: ast.expr) -> None:
        if test.lineno != test.end_lineno:
            return
        raw = self.lines[test.lineno - 1]
        src = raw[test.col_offset:test.end_col_offset].decode()
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            op = test.operand
            if op.lineno != test.lineno:
                return
            new = raw[op.col_offset:op.end_col_offset].decode()
            if not isinstance(op, ast.Name | ast.Attribute | ast.Call | ast.Subscript):
                new = f"({new})" if not new.startswith("(") else new
        elif isinstance(test, ast.Name | ast.Attribute | ast.Call | ast.Subscript):
            new = f"not {src}"
        else:
            new = f"not ({src})"
        self._emit("negate", test.lineno, test.col_offset, test.end_col_offset or 0, new)

    def visit_Return(self, node: ast.Return) -> None:
        v = node.value
        if isinstance(v, ast.Constant) and type(v.value) is bool:
            self._emit("return_bool", v.lineno, v.col_offset, v.end_col_offset or 0, str(not v.value))
        self.generic_visit(node)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        if node.lineno == node.end_lineno:
            raw = self.lines[node.lineno - 1]
            seg = lambda n: raw[n.col_offset:n.end_col_offset].decode()  # noqa: E731
            new = f"{seg(node.orelse)} if {seg(node.test)} else {seg(node.body)}"
            self._emit("ifexp", node.lineno, node.col_offset, node.end_col_offset or 0, new)
        self.generic_visit(node)


def _is_string(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def find_mutations(source: str, rel: str) -> list[Mutation]:
    """Every candidate mutation in one module's source, in source order."""
    tree = ast.parse(source)
    docstrings = {
        n.body[0].value.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module)
        and n.body and isinstance(n.body[0], ast.Expr) and isinstance(getattr(n.body[0], "value", None), ast.Constant)
    }
    finder = _Finder(source.encode().split(b"\n"), rel)
    finder.visit(tree)
    out, seen = [], set()
    for m in finder.found:
        # A mutated line that still parses, differs, and is unique enough to be found again.
        if m.line in docstrings or m.id in seen:
            continue
        seen.add(m.id)
        out.append(m)
    return out


def repo_mutations(repo: Path, source_dirs: tuple[str, ...], exclude: tuple[str, ...]) -> list[Mutation]:
    """Candidates across a repository's library modules (never its tests)."""
    files: list[Path] = []
    for d in source_dirs:
        p = repo / d
        files.extend([p] if p.is_file() else sorted(p.rglob("*.py")))
    out: list[Mutation] = []
    for f in files:
        rel = f.relative_to(repo).as_posix()
        if any(part in exclude for part in Path(rel).parts):
            continue
        out.extend(find_mutations(f.read_text(encoding="utf-8"), rel))
    return out


def parses(text: str) -> bool:
    """Whether a mutated module still compiles (checked lazily: parsing every candidate is slow)."""
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


def apply_text(text: str, m: Mutation) -> str:
    lines = text.split("\n")
    if lines[m.line - 1] != m.original_line:
        raise ValueError(f"{m.file}:{m.line} does not hold the expected line")
    lines[m.line - 1] = m.mutated_line
    return "\n".join(lines)


def apply(repo: Path, m: Mutation) -> None:
    path = repo / m.file
    path.write_text(apply_text(path.read_text(encoding="utf-8"), m), encoding="utf-8")


def revert(repo: Path, m: Mutation) -> None:
    path = repo / m.file
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[m.line - 1] = m.original_line
    path.write_text("\n".join(lines), encoding="utf-8")


def ordered(candidates: list[Mutation], rng: random.Random) -> list[Mutation]:
    """A seeded order that spreads over kinds, so every kind gets drawn."""
    by_kind: dict[str, list[Mutation]] = {}
    for m in candidates:
        by_kind.setdefault(m.kind, []).append(m)
    for group in by_kind.values():
        rng.shuffle(group)
    kinds = sorted(by_kind)
    rng.shuffle(kinds)
    out: list[Mutation] = []
    while any(by_kind.values()):
        for k in kinds:
            if by_kind[k]:
                out.append(by_kind[k].pop())
    return out
