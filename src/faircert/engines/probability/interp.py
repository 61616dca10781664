"""One interpreter of program IR over batches, for two domains: intervals (sound bounds) and points.

Both branches of an `if` run on the whole batch and are merged per row by the condition, so the
code stays vectorised; a branch that no row can take is skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from ...models.program import (
    BOOLEAN_NODES,
    Annotate,
    Assign,
    BinOp,
    BoolOp,
    Call,
    Compare,
    Draw,
    Expr,
    Gaussian,
    If,
    IfExp,
    Neg,
    Not,
    Num,
    Program,
    Var,
    constant_value,
)
from . import intervals as iv


def _cmp(op: str, a, b):
    with np.errstate(invalid="ignore"):
        return {
            "<": np.less,
            "<=": np.less_equal,
            ">": np.greater,
            ">=": np.greater_equal,
            "==": np.equal,
            "!=": np.not_equal,
        }[op](a, b)


def _div(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.divide(a, b)


POINT = SimpleNamespace(
    const=np.float64,
    add=np.add,
    sub=np.subtract,
    mul=np.multiply,
    div=_div,
    neg=np.negative,
    compare=_cmp,
    and_=np.logical_and,
    or_=np.logical_or,
    not_=np.logical_not,
    select=lambda c, a, b: np.where(c, a, b),
    select_bool=lambda c, a, b: np.where(c, a, b),
    to_number=lambda b: np.asarray(b, dtype=np.float64),
    to_bool=lambda x: np.asarray(x) != 0,
    absolute=np.abs,
    minimum=np.minimum,
    maximum=np.maximum,
    all_true=lambda c: bool(np.all(c)),
    all_false=lambda c: not bool(np.any(c)),
)

INTERVAL = SimpleNamespace(
    const=iv.const,
    add=iv.add,
    sub=iv.sub,
    mul=iv.mul,
    div=iv.div,
    neg=iv.neg,
    compare=iv.compare,
    and_=iv.and_,
    or_=iv.or_,
    not_=iv.not_,
    select=iv.select,
    select_bool=iv.select_bool,
    to_number=iv.to_number,
    to_bool=iv.to_bool,
    absolute=iv.absolute,
    minimum=iv.minimum,
    maximum=iv.maximum,
    all_true=lambda c: bool(np.all(c.true)),
    all_false=lambda c: bool(np.all(c.false)),
)


class Interpreter:
    """Runs a program over a batch in one domain (`POINT` or `INTERVAL`)."""

    def __init__(self, ops: SimpleNamespace) -> None:
        self.ops = ops

    def num(self, e: Expr, env: dict[str, Any]) -> Any:
        o = self.ops
        if isinstance(e, Num):
            return o.const(e.value)
        if isinstance(e, Var):
            return env[e.name]
        if isinstance(e, BinOp):
            a, b = self.num(e.left, env), self.num(e.right, env)
            return {"+": o.add, "-": o.sub, "*": o.mul, "/": o.div}[e.op](a, b)
        if isinstance(e, Neg):
            return o.neg(self.num(e.operand, env))
        if isinstance(e, Call):
            args = [self.num(a, env) for a in e.args]
            return {"abs": o.absolute, "min": o.minimum, "max": o.maximum}[e.fn](*args)
        if isinstance(e, IfExp):
            return o.select(self.cond(e.test, env), self.num(e.body, env), self.num(e.orelse, env))
        return o.to_number(self.cond(e, env))

    def cond(self, e: Expr, env: dict[str, Any]) -> Any:
        o = self.ops
        if isinstance(e, Compare):
            return o.compare(e.op, self.num(e.left, env), self.num(e.right, env))
        if isinstance(e, BoolOp):
            out = self.cond(e.values[0], env)
            for v in e.values[1:]:
                out = (o.and_ if e.op == "and" else o.or_)(out, self.cond(v, env))
            return out
        if isinstance(e, Not):
            return o.not_(self.cond(e.operand, env))
        if isinstance(e, IfExp) and isinstance(e.body, BOOLEAN_NODES) and isinstance(e.orelse, BOOLEAN_NODES):
            return o.select_bool(self.cond(e.test, env), self.cond(e.body, env), self.cond(e.orelse, env))
        return o.to_bool(self.num(e, env))

    def block(self, body: list, env: dict[str, Any], draws: Sequence[Any], notes: dict[str, Any]) -> None:
        o = self.ops
        for s in body:
            if isinstance(s, Assign):
                env[s.target] = self.num(s.value, env)
            elif isinstance(s, Draw):
                value = draws[s.site]
                if isinstance(s.dist, Gaussian) and constant_value(s.dist.mean) is None:
                    value = o.add(value, self.num(s.dist.mean, env))
                env[s.target] = value
            elif isinstance(s, Annotate):
                notes[s.kind] = self.cond(s.condition, env)
            elif isinstance(s, If):
                c = self.cond(s.test, env)
                if o.all_true(c):
                    self.block(s.body, env, draws, notes)
                elif o.all_false(c):
                    self.block(s.orelse, env, draws, notes)
                else:
                    then_env, else_env = dict(env), dict(env)
                    self.block(s.body, then_env, draws, notes)
                    self.block(s.orelse, else_env, draws, notes)
                    for name in set(then_env) & set(else_env):
                        a, b = then_env[name], else_env[name]
                        env[name] = a if a is b else o.select(c, a, b)
                    for name in set(env) - (set(then_env) & set(else_env)):
                        del env[name]  # assigned on one path only: never read later (checked at parse)
            else:  # pragma: no cover - the parser builds only these
                raise TypeError(type(s).__name__)

    def run(self, program: Program, draws: Sequence[Any], queries: Sequence[Expr] = ()) -> tuple[dict, list, dict]:
        """(annotation conditions, query conditions at the end, final environment)."""
        env: dict[str, Any] = {}
        notes: dict[str, Any] = {}
        with np.errstate(all="ignore"):
            self.block(program.body, env, draws, notes)
            results = [self.cond(q, env) for q in queries]
        return notes, results, env
