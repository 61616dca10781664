"""Decision and population programs (FairSquare's `.fr` language), parsed safely into an IR.

The source is read with Python's `ast` module and translated node by node; nothing in it is ever
executed. Supported: top-level functions without parameters (their bodies run in file order, sharing
one global state) or plain top-level statements; assignments; `+ - * /` and unary minus; `if/elif/
else` and `a if c else b`; comparisons (chained too), `and/or/not`; `abs`, `min`, `max`; the
distributions `gaussian(mean, variance)`, `uniform(lo, hi)` and `step([(lo, hi, mass), ...])`; the
annotations `sensitiveAttribute(c)`, `qualified(c)`, `fairnessTarget(c)`, evaluated where they
appear; a `return` is accepted and ignored (outputs are named by the annotations).

Every random draw in the text is one independent random variable (a "site"): a program without
loops runs each site at most once, and a site on a path not taken does not influence the outcome,
so the program's distribution is that of a deterministic function of independent site values.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ModelFormatError
from ..limits import MAX_EXPRESSION_DEPTH, MAX_TEXT_BYTES, quoted, read_text

ANNOTATIONS = ("sensitiveAttribute", "qualified", "fairnessTarget")
FUNCTIONS = {"abs": 1, "min": 2, "max": 2}
MAX_LITERAL = 1e300  # larger literals overflow to inf in the first product


class ProgramError(ModelFormatError):
    """A program that does not parse or uses an unsupported construct (with file, line, column)."""


# ----- expressions -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Num:
    value: float


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class BinOp:
    op: str  # + - * /
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Neg:
    operand: Expr


@dataclass(frozen=True)
class Call:
    fn: str  # abs, min, max
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Compare:
    op: str  # < <= > >= == !=
    left: Expr
    right: Expr


@dataclass(frozen=True)
class BoolOp:
    op: str  # and, or
    values: tuple[Expr, ...]


@dataclass(frozen=True)
class Not:
    operand: Expr


@dataclass(frozen=True)
class IfExp:
    test: Expr
    body: Expr
    orelse: Expr


Expr = Num | Var | BinOp | Neg | Call | Compare | BoolOp | Not | IfExp
BOOLEAN_NODES = (Compare, BoolOp, Not)


# ----- distributions -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Gaussian:
    """N(mean, variance); a non-constant mean shifts a N(0, variance) draw (FairSquare's footnote 1)."""

    mean: Expr
    variance: float


@dataclass(frozen=True)
class Uniform:
    low: float
    high: float


@dataclass(frozen=True)
class Step:
    """Piecewise-uniform: bar [lo, hi) carries probability `mass` (masses sum to 1)."""

    bars: tuple[tuple[float, float, float], ...]


Dist = Gaussian | Uniform | Step


# ----- statements --------------------------------------------------------------------------------
@dataclass
class Assign:
    target: str
    value: Expr
    line: int


@dataclass
class Draw:
    target: str
    dist: Dist
    site: int
    line: int


@dataclass
class If:
    test: Expr
    body: list[Stmt]
    orelse: list[Stmt]
    line: int


@dataclass
class Annotate:
    kind: str
    condition: Expr
    line: int


Stmt = Assign | Draw | If | Annotate


@dataclass
class Program:
    """A loop-free probabilistic program: statements, its random sites, its annotations."""

    body: list[Stmt]
    sites: list[Draw]
    annotations: dict[str, Annotate]
    source: str = "<program>"
    #: Variables assigned on every path (usable after the program, e.g. in queries).
    defined: frozenset[str] = field(default_factory=frozenset)

    @property
    def n_sites(self) -> int:
        return len(self.sites)

    def require(self, *kinds: str) -> None:
        missing = [k for k in kinds if k not in self.annotations]
        if missing:
            raise ProgramError(
                f"{self.source}: the program has no {', '.join(missing)}(...) annotation; "
                f"add e.g. `{missing[0]}(x > 0)` at the top level of a function"
            )

    def __str__(self) -> str:
        return f"Program({self.source}: {self.n_sites} random draws)"


# ----- parser ------------------------------------------------------------------------------------
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


class _Parser:
    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.sites: list[Draw] = []
        self.annotations: dict[str, Annotate] = {}

    def error(self, node: ast.AST | None, message: str) -> ProgramError:
        line = getattr(node, "lineno", 0)
        col = getattr(node, "col_offset", -1) + 1
        return ProgramError(f"{self.filename}:{line}:{col}: {message}")

    # statements
    def module(self, tree: ast.Module) -> list[Stmt]:
        out: list[Stmt] = []
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                a = node.args
                if a.args or a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
                    raise self.error(
                        node,
                        f"function {node.name!r} takes parameters; program functions "
                        "take none (variables are shared between functions)",
                    )
                if node.decorator_list:
                    raise self.error(node, "decorators are not supported")
                out.extend(self.block(node.body, top=True))
            elif (
                isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                continue  # a docstring
            else:
                out.extend(self.block([node], top=True))
        return out

    def block(self, nodes: list[ast.stmt], top: bool) -> list[Stmt]:
        out: list[Stmt] = []
        for node in nodes:
            stmt = self.statement(node, top)
            if stmt is not None:
                out.append(stmt)
        return out

    def statement(self, node: ast.stmt, top: bool) -> Stmt | None:
        if isinstance(node, ast.Assign):
            if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                raise self.error(node, "only `name = expression` assignments are supported")
            return self.assign(node.targets[0].id, node.value, node)
        if isinstance(node, ast.AugAssign):
            if not isinstance(node.target, ast.Name) or type(node.op) not in _BINOPS:
                raise self.error(node, "only `name += expression` (+ - * /) augmented assignments are supported")
            value = BinOp(_BINOPS[type(node.op)], Var(node.target.id), self.expr(node.value))
            return Assign(node.target.id, value, node.lineno)
        if isinstance(node, ast.If):
            return If(self.expr(node.test), self.block(node.body, False), self.block(node.orelse, False), node.lineno)
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id in ANNOTATIONS
        ):
            return self.annotation(node.value, top)
        if isinstance(node, ast.Return):
            return None
        if isinstance(node, ast.Pass):
            return None
        kind = type(node).__name__
        hint = " (loops must be unrolled by hand)" if kind in ("For", "While") else ""
        raise self.error(node, f"unsupported statement `{kind}`{hint}")

    def assign(self, target: str, value: ast.expr, node: ast.stmt) -> Stmt:
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id in ("gaussian", "uniform", "step")
        ):
            draw = Draw(target, self.distribution(value), len(self.sites), node.lineno)
            self.sites.append(draw)
            return draw
        return Assign(target, self.expr(value), node.lineno)

    def annotation(self, call: ast.Call, top: bool) -> Annotate:
        assert isinstance(call.func, ast.Name)  # the caller matched it by name
        kind = call.func.id
        if not top:
            raise self.error(call, f"{kind}(...) must be at the top level of a function, not inside an if")
        if len(call.args) != 1 or call.keywords:
            raise self.error(call, f"{kind}(...) takes exactly one condition")
        if kind in self.annotations:
            raise self.error(call, f"{kind}(...) is given twice (first on line {self.annotations[kind].line})")
        ann = Annotate(kind, self.expr(call.args[0]), call.lineno)
        self.annotations[kind] = ann
        return ann

    def distribution(self, call: ast.Call) -> Dist:
        assert isinstance(call.func, ast.Name)  # the caller matched it by name
        name = call.func.id
        if call.keywords:
            raise self.error(call, f"{name}(...) takes positional arguments only")
        if name == "gaussian":
            if len(call.args) != 2:
                raise self.error(call, "gaussian(mean, variance) takes two arguments")
            variance = self.constant(call.args[1], "the variance of gaussian(...)")
            if not np.isfinite(variance) or variance <= 0:
                raise self.error(call.args[1], f"gaussian variance must be a finite number > 0, got {variance}")
            mean = self.expr(call.args[0])
            if isinstance(mean, BOOLEAN_NODES):
                raise self.error(call.args[0], "the mean of gaussian(...) must be a number")
            return Gaussian(mean, variance)
        if name == "uniform":
            if len(call.args) != 2:
                raise self.error(call, "uniform(lo, hi) takes two arguments")
            lo = self.constant(call.args[0], "uniform's lower end")
            hi = self.constant(call.args[1], "uniform's upper end")
            if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
                raise self.error(call, f"uniform(lo, hi) needs finite lo < hi, got ({lo}, {hi})")
            return Uniform(lo, hi)
        # step
        if len(call.args) != 1 or not isinstance(call.args[0], (ast.List, ast.Tuple)):
            raise self.error(call, "step(...) takes one list of (lo, hi, mass) bars")
        bars = []
        for elt in call.args[0].elts:
            if not isinstance(elt, (ast.Tuple, ast.List)) or len(elt.elts) != 3:
                raise self.error(elt, "each step bar is a (lo, hi, mass) triple")
            lo, hi, mass = (self.constant(e, "a step bar entry") for e in elt.elts)
            if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
                raise self.error(elt, f"step bar needs finite lo < hi, got ({lo}, {hi})")
            if not (np.isfinite(mass) and mass >= 0):
                raise self.error(elt, f"step bar mass must be >= 0, got {mass}")
            bars.append((lo, hi, mass))
        if not bars:
            raise self.error(call, "step(...) needs at least one bar")
        order = sorted(bars)
        for (a0, b0, _), (a1, _, _) in zip(order, order[1:]):
            if a1 < b0:
                raise self.error(call, f"step bars [{a0}, {b0}) and [{a1}, ...) overlap")
        total = sum(m for _, _, m in bars)
        if abs(total - 1.0) > 1e-6:
            raise self.error(call, f"step bar masses sum to {total:.10g}; they must sum to 1")
        return Step(tuple(order))

    def constant(self, node: ast.expr, what: str) -> float:
        """A literal number, possibly built with unary minus and arithmetic on literals."""
        expr = self.expr(node)
        value = constant_value(expr)
        if value is None:
            raise self.error(node, f"{what} must be a constant number")
        return value

    # expressions
    def expr(self, node: ast.expr) -> Expr:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                return Num(1.0 if node.value else 0.0)
            if isinstance(node.value, (int, float)):
                if not abs(node.value) <= MAX_LITERAL:  # also refuses a 400-digit integer, before float() overflows
                    raise self.error(node, f"the number {quoted(node.value)} is too large (at most {MAX_LITERAL:.0e})")
                return Num(float(node.value))
            raise self.error(node, f"unsupported constant {node.value!r}; only numbers are allowed")
        if isinstance(node, ast.Name):
            if node.id in ("True", "False"):
                return Num(1.0 if node.id == "True" else 0.0)
            return Var(node.id)
        if isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                raise self.error(node, f"unsupported operator `{type(node.op).__name__}`; use + - * /")
            return BinOp(_BINOPS[type(node.op)], self.expr(node.left), self.expr(node.right))
        if isinstance(node, ast.UnaryOp):
            inner = self.expr(node.operand)
            if isinstance(node.op, ast.USub):
                return Neg(inner)
            if isinstance(node.op, ast.UAdd):
                return inner
            if isinstance(node.op, ast.Not):
                return Not(inner)
            raise self.error(node, f"unsupported unary operator `{type(node.op).__name__}`")
        if isinstance(node, ast.Compare):
            parts = []
            left = self.expr(node.left)
            for op, comp in zip(node.ops, node.comparators):
                if type(op) not in _CMPOPS:
                    raise self.error(node, f"unsupported comparison `{type(op).__name__}`")
                right = self.expr(comp)
                parts.append(Compare(_CMPOPS[type(op)], left, right))
                left = right
            return parts[0] if len(parts) == 1 else BoolOp("and", tuple(parts))
        if isinstance(node, ast.BoolOp):
            return BoolOp("and" if isinstance(node.op, ast.And) else "or", tuple(self.expr(v) for v in node.values))
        if isinstance(node, ast.IfExp):
            return IfExp(self.expr(node.test), self.expr(node.body), self.expr(node.orelse))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name in FUNCTIONS:
                if len(node.args) != FUNCTIONS[name] or node.keywords:
                    raise self.error(node, f"{name}(...) takes {FUNCTIONS[name]} argument(s)")
                return Call(name, tuple(self.expr(a) for a in node.args))
            if name in ("gaussian", "uniform", "step"):
                raise self.error(node, f"{name}(...) may only be assigned directly to a variable (`x = {name}(...)`)")
            raise self.error(
                node,
                f"unknown function {name!r}; supported: gaussian, uniform, step, abs, min, max and the annotations",
            )
        raise self.error(node, f"unsupported expression `{type(node).__name__}`")


def constant_value(expr: Expr) -> float | None:
    """The value of an expression made of literals only, else None."""
    if isinstance(expr, Num):
        return expr.value
    if isinstance(expr, Neg):
        v = constant_value(expr.operand)
        return None if v is None else -v
    if isinstance(expr, BinOp):
        a, b = constant_value(expr.left), constant_value(expr.right)
        if a is None or b is None or (expr.op == "/" and b == 0):
            return None
        return {"+": a + b, "-": a - b, "*": a * b, "/": a / b if b else 0.0}[expr.op]
    return None


# ----- checks ------------------------------------------------------------------------------------
def variables_used(expr: Expr) -> list[str]:
    if isinstance(expr, Var):
        return [expr.name]
    if isinstance(expr, Num):
        return []
    if isinstance(expr, (BinOp, Compare)):
        return variables_used(expr.left) + variables_used(expr.right)
    if isinstance(expr, (Neg, Not)):
        return variables_used(expr.operand)
    if isinstance(expr, (Call, BoolOp)):
        items = expr.args if isinstance(expr, Call) else expr.values
        return [n for e in items for n in variables_used(e)]
    if isinstance(expr, IfExp):
        return variables_used(expr.test) + variables_used(expr.body) + variables_used(expr.orelse)
    raise TypeError(type(expr).__name__)


def _check_defined(body: list[Stmt], defined: set[str], filename: str) -> set[str]:
    """Definite assignment: every variable read is assigned on every path before; returns the set after."""

    def need(expr: Expr, line: int) -> None:
        for name in variables_used(expr):
            if name not in defined:
                raise ProgramError(
                    f"{filename}:{line}: variable {name!r} is used before it is assigned "
                    "(on some path); assign it first"
                )

    for stmt in body:
        if isinstance(stmt, Assign):
            need(stmt.value, stmt.line)
            defined.add(stmt.target)
        elif isinstance(stmt, Draw):
            if isinstance(stmt.dist, Gaussian):
                need(stmt.dist.mean, stmt.line)
            defined.add(stmt.target)
        elif isinstance(stmt, Annotate):
            need(stmt.condition, stmt.line)
        else:
            need(stmt.test, stmt.line)
            a = _check_defined(stmt.body, set(defined), filename)
            b = _check_defined(stmt.orelse, set(defined), filename)
            defined.update(a & b)
    return defined


def _syntax_tree(text: str, filename: str, mode: str) -> ast.AST:
    """Python's syntax tree of the text, no deeper than `MAX_EXPRESSION_DEPTH`: the translation and
    every engine that walks the program recurse once per level."""
    try:
        tree = ast.parse(text, filename=filename, mode=mode)
    except SyntaxError as exc:
        raise ProgramError(f"{filename}:{exc.lineno}:{exc.offset}: syntax error: {exc.msg}") from None
    except (RecursionError, MemoryError):  # the parser's own stack, on thousands of nested operators
        raise ProgramError(
            f"{filename}: expressions nested too deeply to parse (faircert reads at most "
            f"{MAX_EXPRESSION_DEPTH} levels; see faircert.limits)"
        ) from None
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_EXPRESSION_DEPTH:
            raise ProgramError(
                f"{filename}:{getattr(node, 'lineno', 0)}: expressions and statements nested more "
                f"than {MAX_EXPRESSION_DEPTH} levels deep (see faircert.limits); split the "
                "expression with intermediate variables"
            )
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return tree


def parse_expression(text: str, filename: str = "<query>") -> Expr:
    """One expression (a query such as `x1 + x2 >= 0`), parsed safely."""
    tree = _syntax_tree(text.strip(), filename, "eval")
    return _Parser(filename).expr(tree.body)  # type: ignore[attr-defined]


def parse_program(source: str, filename: str = "<program>") -> Program:
    """Parse program text into the IR; syntax errors and unsupported constructs name file:line:col."""
    tree = _syntax_tree(source, filename, "exec")
    assert isinstance(tree, ast.Module)  # what mode "exec" parses to
    parser = _Parser(filename)
    body = parser.module(tree)
    defined = _check_defined(body, set(), filename)
    return Program(body, parser.sites, parser.annotations, filename, frozenset(defined))


def load_program(path_or_source: str | os.PathLike[str] | Program) -> Program:
    """A Program from a Program, a path to a `.fr` file, or program text."""
    if isinstance(path_or_source, Program):
        return path_or_source
    text = str(path_or_source)
    if isinstance(path_or_source, Path) or ("\n" not in text and (text.endswith(".fr") or Path(text).is_file())):
        path = Path(text)
        if not path.exists():
            raise ProgramError(f"cannot read program file {quoted(text)}: no such file")
        return parse_program(read_text(path, ProgramError, "program", MAX_TEXT_BYTES), str(path))
    return parse_program(text)
