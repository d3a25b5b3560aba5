"""Property tests: whatever text comes in, the front end either returns a
checked program or raises its own ``P4Error`` with a usable position —
never another exception — and a program that still compiles still meets
the IR contract.  Inputs are valid programs mutated at the token level
(delete, duplicate, swap, insert), which reach deep into the parser and
type checker, plus arbitrary text for the lexer and preprocessor."""

from __future__ import annotations

import re

from fe_irwalk import ir_problems
from fe_util import FEATURES, v1
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p4mcc.p4switch.frontend import ast as A
from p4mcc.p4switch.frontend import compile_text
from p4mcc.p4switch.frontend.errors import P4Error

_TOKEN = re.compile(
    r'\s+|[A-Za-z_][A-Za-z0-9_]*|\d\w*|"(?:[^"\\\n]|\\.)*"|&&&|\|\+\||\|-\||<<|&&|\|\||==|!=|<=|>=|\+\+|\.\.|.',
    re.S,
)

with open(FEATURES, encoding="utf-8") as _f:
    _FEATURES_SRC = _f.read()
_SMALL_SRC = v1(
    ingress_locals="""action a(bit<8> v) { m.x = v; }
    table t { key = { m.x: ternary; } actions = { a; NoAction; } default_action = NoAction(); }""",
    ingress_body="if (hdr.h.isValid()) { t.apply(); m.y = m.y |+| (bit<16>)m.x; } else { m.s = -8s3 >> 1; }",
)
SEEDS = [_TOKEN.findall(_FEATURES_SRC), _TOKEN.findall(_SMALL_SRC)]
VOCAB = sorted({t for toks in SEEDS for t in toks if not t.isspace()})


def compile_or_p4error(text: str) -> None:
    try:
        prog = compile_text(text, "fuzz.p4")
    except P4Error as e:
        assert e.message
        rendered = e.format(source_text=text)
        assert "error:" in rendered
        if e.span is not None and e.span.file == "fuzz.p4" and e.span.line > 0:
            assert 1 <= e.span.line <= text.count("\n") + 1
            assert e.span.col >= 1
        return
    assert isinstance(prog, A.Program)
    # whatever still compiles must still satisfy the IR contract
    assert ir_problems(prog) == []


mutation = st.tuples(
    st.sampled_from(["delete", "duplicate", "swap", "insert"]),
    st.integers(min_value=0, max_value=10**6),
    st.integers(min_value=0, max_value=10**6),
    st.sampled_from(VOCAB),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.sampled_from([0, 1]), mutations=st.lists(mutation, min_size=1, max_size=3))
def test_mutated_programs_raise_only_p4error(seed: int, mutations: list) -> None:
    toks = list(SEEDS[seed])
    idx = [i for i, t in enumerate(toks) if not t.isspace()]
    for kind, i, j, extra in mutations:
        a, b = idx[i % len(idx)], idx[j % len(idx)]
        if kind == "delete":
            toks[a] = ""
        elif kind == "duplicate":
            toks[a] = toks[a] + " " + toks[a]
        elif kind == "swap":
            toks[a], toks[b] = toks[b], toks[a]
        else:
            toks[a] = toks[a] + " " + extra
    compile_or_p4error("".join(toks))


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("#ifdefn<>{}()[];:=.,@&|+-*/%!~?^'\"\\ \n\tabcx01_w8s")), max_size=120))
def test_arbitrary_text_raises_only_p4error(text: str) -> None:
    compile_or_p4error(text)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=40))
def test_random_token_soup_raises_only_p4error(words: list[str]) -> None:
    compile_or_p4error("#include <v1model.p4>\n" + " ".join(words))


def test_deep_nesting_is_a_clean_error() -> None:
    text = "const int x = " + "(" * 5000 + "1" + ")" * 5000 + ";\n"
    compile_or_p4error(text)


def test_runaway_constants_are_a_clean_error() -> None:
    text = "const int a = 1 << 65536;\n" + "".join(
        f"const int a{i} = {'a' if i == 0 else f'a{i - 1}'} * {'a' if i == 0 else f'a{i - 1}'};\n" for i in range(40))
    compile_or_p4error(text)
