"""Hand-written recursive-descent parser for P4_16.

P4_16's grammar is ambiguous between type names and other names
(``T x;`` declares a variable only because ``T`` is a type; ``a < b`` is a
comparison unless ``a`` names something generic).  The parser therefore keeps
the set of type names declared so far (plus type parameters of the
declaration being parsed) and decides with it, backtracking only for type
arguments after a callee name (``hash<bit<16>>(...)`` vs ``a < b``) and for
tuple keysets.
"""

from __future__ import annotations

from typing import Callable, Optional, TypeVar

from . import ast as A
from .ast import Span
from .errors import P4Error
from .consteval import wrap
from .lexer import Token
from .types import BOOL, INT, STRING, BitsType

# Words that can never be used as names.  The contextual keywords (apply,
# key, actions, entries, state, type, priority, list) are not in here.
RESERVED = frozenset("""
abstract action bit bool const control default else enum error exit extern false
header header_union if in inout int match_kind out package parser return select
string struct switch table transition true tuple typedef varbit void value_set _
""".split())

BASE_TYPE_WORDS = frozenset(["bit", "int", "varbit", "bool", "error", "string", "void",
                             "match_kind", "tuple", "list"])

_BINARY_LEVELS: list[tuple[str, ...]] = [
    ("||",),
    ("&&",),
    ("==", "!="),
    ("<", ">", "<=", ">="),
    ("|",),
    ("^",),
    ("&",),
    ("<<", ">>"),
    ("++", "+", "-", "|+|", "|-|"),
    ("*", "/", "%"),
]
_LEVEL_OF: dict[str, int] = {op: i for i, ops in enumerate(_BINARY_LEVELS) for op in ops}

_COMPOUND_ASSIGN = {
    "+=": "+", "-=": "-", "*=": "*", "/=": "/", "%=": "%", "&=": "&", "|=": "|",
    "^=": "^", "<<=": "<<", ">>=": ">>", "|+|=": "|+|", "|-|=": "|-|",
}

T = TypeVar("T")

MAX_NESTING = 100


class Parser:
    """Parses a token list (from the preprocessor) into an ``ast.Program``."""

    def __init__(self, toks: list[Token], type_names: Optional[set[str]] = None) -> None:
        self.toks = toks
        self.pos = 0
        self.types: list[set[str]] = [set(type_names or ())]
        self.depth = 0

    # ------------------------------------------------------------------ tokens
    def peek(self, k: int = 0) -> Token:
        i = self.pos + k
        if i < len(self.toks):
            return self.toks[i]
        return self.toks[-1]

    def advance(self) -> Token:
        t = self.toks[self.pos]
        if t.kind != "eof":
            self.pos += 1
        return t

    def at(self, value: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t.value == value and t.kind in ("op", "id")

    def at_op(self, value: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t.kind == "op" and t.value == value

    def accept(self, value: str) -> Optional[Token]:
        t = self.peek()
        if t.value == value and t.kind in ("op", "id"):
            self.pos += 1
            return t
        return None

    def expect(self, value: str, what: Optional[str] = None) -> Token:
        t = self.peek()
        if t.value == value and t.kind in ("op", "id"):
            self.pos += 1
            return t
        raise self.error(f"expected {what or repr(value)}, found {self.describe(t)}", t)

    def describe(self, t: Token) -> str:
        if t.kind == "eof":
            return "end of input"
        return repr(t.text())

    def error(self, msg: str, tok: Optional[Token] = None) -> P4Error:
        t = tok or self.peek()
        return P4Error(t.span, msg)

    def at_close_angle(self) -> bool:
        return self.at_op(">") or self.at_op(">=") or self.at_op(">>=")

    def expect_close_angle(self) -> None:
        t = self.peek()
        if t.kind == "op" and t.value == ">":
            self.pos += 1
            return
        raise self.error(f"expected '>', found {self.describe(t)}", t)

    def expect_name(self, what: str = "a name") -> tuple[str, Span]:
        t = self.peek()
        if t.kind == "id" and t.value not in RESERVED:
            self.pos += 1
            return str(t.value), t.span
        raise self.error(f"expected {what}, found {self.describe(t)}", t)

    def is_name(self, k: int = 0) -> bool:
        t = self.peek(k)
        return t.kind == "id" and t.value not in RESERVED

    def try_parse(self, fn: Callable[[], T]) -> Optional[T]:
        saved = self.pos
        saved_types = [set(s) for s in self.types]
        try:
            return fn()
        except P4Error:
            self.pos = saved
            self.types = saved_types
            return None

    # ------------------------------------------------------------ type names
    def is_type_name(self, name: object) -> bool:
        return any(name in s for s in self.types)

    def declare_type(self, name: str) -> None:
        self.types[0].add(name)

    def push_type_params(self, names: list[str]) -> None:
        self.types.append(set(names))

    def pop_type_params(self) -> None:
        self.types.pop()

    def starts_type(self, k: int = 0) -> bool:
        t = self.peek(k)
        if t.kind != "id":
            return t.kind == "op" and t.value == "." and self.peek(k + 1).kind == "id" \
                and self.is_type_name(self.peek(k + 1).value)
        return t.value in BASE_TYPE_WORDS or self.is_type_name(t.value)

    # ================================================================ program
    def parse_program(self) -> A.Program:
        decls: list[A.Decl] = []
        start = self.peek().span
        while self.peek().kind != "eof":
            if self.accept(";"):
                continue
            d = self.parse_declaration()
            decls.append(d)
        return A.Program(decls, span=start)

    def parse_annotations(self) -> list[A.Annotation]:
        annos: list[A.Annotation] = []
        structured: set[str] = set()
        while self.at_op("@"):
            at = self.advance()
            t = self.peek()
            if t.kind != "id":
                raise self.error(f"expected annotation name, found {self.describe(t)}", t)
            self.advance()
            anno = A.Annotation(str(t.value), span=at.span)
            if t.value == "pragma":
                # "@pragma name args..." runs to the end of its line.
                body = []
                while self.peek().kind != "eof" and self.peek().span.line == t.span.line \
                        and self.peek().span.file == t.span.file:
                    body.append(self.advance())
                anno.raw = " ".join(b.text() for b in body)
                annos.append(anno)
                continue
            # The body must touch the name: "@name(" not "@name (" is not required by
            # the grammar, so accept both.
            if self.at_op("("):
                body = self._balanced("(", ")")
                anno.raw = " ".join(b.text() for b in body)
                anno.args = self._annotation_exprs(body) or []
            elif self.at_op("["):
                structured.add(anno.name)
                if any(a.name == anno.name for a in annos):
                    raise P4Error(at.span, f"duplicate name @{anno.name} for a structured annotation")
                body = self._balanced("[", "]")
                anno.raw = " ".join(b.text() for b in body)
                anno.kv = self._annotation_kv(body, at)
            if anno.name in structured and any(a.name == anno.name for a in annos):
                raise P4Error(at.span, f"duplicate name @{anno.name} for a structured annotation")
            annos.append(anno)
        return annos

    def _balanced(self, open_: str, close: str) -> list[Token]:
        start = self.expect(open_)
        depth = 1
        body: list[Token] = []
        while True:
            t = self.advance()
            if t.kind == "eof":
                raise P4Error(start.span, f"unbalanced {open_!r} in annotation")
            if t.kind == "op" and t.value in ("(", "[", "{"):
                depth += 1
            elif t.kind == "op" and t.value in (")", "]", "}"):
                depth -= 1
                if depth == 0:
                    return body
            body.append(t)

    def _annotation_exprs(self, body: list[Token]) -> Optional[list[A.Expression]]:
        if not body:
            return []
        eof = Token("eof", None, body[-1].span, body[-1].end)
        sub = Parser(body + [eof])
        sub.types = self.types
        try:
            exprs = [sub.parse_expression()]
            while sub.accept(","):
                exprs.append(sub.parse_expression())
            if sub.peek().kind != "eof":
                return None
            for e in exprs:
                _type_literal(e)
            return exprs
        except P4Error:
            return None

    def _annotation_kv(self, body: list[Token], at: Token) -> dict[str, A.Expression]:
        eof = Token("eof", None, body[-1].span if body else at.span, 0)
        sub = Parser(body + [eof])
        sub.types = self.types
        out: dict[str, A.Expression] = {}
        if sub.peek().kind != "eof" and not (sub.is_name() and sub.at_op("=", 1)):
            # "@anno[e1, e2, ...]": an expression list, kept under "" in kv order
            exprs = self._annotation_exprs(body)
            if exprs is None:
                raise P4Error(body[0].span, "malformed structured annotation")
            return {str(i): e for i, e in enumerate(exprs)}
        while sub.peek().kind != "eof":
            name, _ = sub.expect_name("a key")
            sub.expect("=")
            if name in out:
                raise P4Error(sub.toks[sub.pos - 2].span, f"duplicate key {name!r} in structured annotation")
            value = sub.parse_expression()
            if isinstance(value, (A.ListExpr, A.StructExpr)):
                raise P4Error(value.span, "structured annotation values must be integers, strings or booleans")
            out[name] = _type_literal(value)
            if not sub.accept(","):
                break
        if sub.peek().kind != "eof":
            raise sub.error(f"unexpected {sub.describe(sub.peek())} in structured annotation")
        return out

    def parse_declaration(self) -> A.Decl:
        annos = self.parse_annotations()
        t = self.peek()
        v = t.value if t.kind == "id" else None
        if v == "const":
            d: A.Decl = self.parse_const()
        elif v == "extern":
            d = self.parse_extern()
        elif v == "action":
            d = self.parse_action()
        elif v == "parser":
            d = self.parse_parser()
        elif v == "control":
            d = self.parse_control()
        elif v == "package":
            d = self.parse_package()
        elif v in ("header", "header_union", "struct"):
            d = self.parse_struct()
        elif v == "enum":
            d = self.parse_enum()
        elif v in ("typedef", "type") and not (v == "type" and self.at_op("(", 1)):
            d = self.parse_typedef()
        elif v == "error" and self.at_op("{", 1):
            d = self.parse_error_decl()
        elif v == "match_kind" and self.at_op("{", 1):
            d = self.parse_match_kind()
        elif v == "value_set":
            d = self.parse_value_set()
        else:
            d = self.parse_function_or_instance(top=True)
        d.annotations = annos + d.annotations
        return d

    # ------------------------------------------------------------ type refs
    def parse_typeref(self, allow_unknown: bool = False, allow_stack: bool = True) -> A.TypeRef:
        t = self.peek()
        span = t.span
        if t.kind == "id":
            v = t.value
            if v in ("bit", "int", "varbit"):
                self.advance()
                width: Optional[A.Expression] = None
                if self.at_op("<"):
                    self.advance()
                    wt = self.peek()
                    if wt.kind == "int":
                        self.advance()
                        width = _int_lit(wt)
                    elif wt.kind == "op" and wt.value == "(":
                        self.advance()
                        width = self.parse_expression()
                        self.expect(")")
                    elif self.is_name():
                        self.advance()
                        width = A.PathExpr(str(wt.value), span=wt.span)
                    else:
                        raise self.error(f"expected a width, found {self.describe(wt)}")
                    self.expect_close_angle()
                elif v == "varbit":
                    raise self.error("varbit needs a maximum width: varbit<W>")
                elif v == "bit":
                    width = A.IntLit(1, span=span)
                base: A.TypeRef = A.BaseTypeRef(str(v), width, span=span)
            elif v in ("bool", "error", "string", "void", "match_kind"):
                self.advance()
                base = A.BaseTypeRef(str(v), span=span)
            elif v in ("tuple", "list") and self.at_op("<", 1):
                self.advance()
                self.advance()
                elems = [self.parse_type_arg()]
                while self.accept(","):
                    elems.append(self.parse_type_arg())
                self.expect_close_angle()
                base = A.TupleTypeRef(elems, span=span)
            elif v == "_":
                self.advance()
                base = A.DontCareTypeRef(span=span)
            elif v not in RESERVED and (allow_unknown or self.is_type_name(v)):
                self.advance()
                base = self._named_type_rest(str(v), span, False)
            else:
                raise self.error(f"expected a type, found {self.describe(t)}", t)
        elif t.kind == "op" and t.value == "." and self.peek(1).kind == "id":
            self.advance()
            nt = self.advance()
            base = self._named_type_rest(str(nt.value), span, True)
        else:
            raise self.error(f"expected a type, found {self.describe(t)}", t)
        while allow_stack and self.at_op("["):
            self.advance()
            size = self.parse_expression()
            self.expect("]")
            base = A.StackTypeRef(base, size, span=span)
        return base

    def _named_type_rest(self, name: str, span: Span, top: bool) -> A.NamedTypeRef:
        args: list[A.TypeRef] = []
        if self.at_op("<"):
            self.advance()
            args.append(self.parse_type_arg())
            while self.accept(","):
                args.append(self.parse_type_arg())
            self.expect_close_angle()
        return A.NamedTypeRef(name, args, top, span=span)

    def parse_type_arg(self) -> A.TypeRef:
        if self.at("_") and not self.is_type_name("_"):
            t = self.advance()
            return A.DontCareTypeRef(span=t.span)
        return self.parse_typeref()

    def parse_type_params(self) -> list[str]:
        names: list[str] = []
        if self.at_op("<"):
            self.advance()
            names.append(self.expect_name("a type parameter")[0])
            while self.accept(","):
                names.append(self.expect_name("a type parameter")[0])
            self.expect_close_angle()
        return names

    # ------------------------------------------------------------ params
    def parse_params(self) -> list[A.Param]:
        self.expect("(")
        params: list[A.Param] = []
        if self.accept(")"):
            return params
        while True:
            annos = self.parse_annotations()
            t = self.peek()
            direction = ""
            if t.kind == "id" and t.value in ("in", "out", "inout"):
                direction = str(t.value)
                self.advance()
            tr = self.parse_typeref(allow_unknown=True)
            name, nspan = self.expect_name("a parameter name")
            default = None
            if self.accept("="):
                default = self.parse_expression()
            p = A.Param(name, direction, tr, default, span=t.span)
            p.annotations = annos
            p.optional = any(a.name == "optional" for a in annos)
            params.append(p)
            if self.accept(")"):
                return params
            self.expect(",", "',' or ')'")

    # ------------------------------------------------------------ declarations
    def parse_const(self) -> A.ConstDecl:
        start = self.expect("const")
        tr = self.parse_typeref()
        name, _ = self.expect_name()
        self.expect("=")
        value = self.parse_expression()
        self.expect(";")
        return A.ConstDecl(name, tr, value, span=start.span)

    def parse_typedef(self) -> A.TypedefDecl:
        start = self.advance()
        tr = self.parse_typeref()
        name, _ = self.expect_name("a type name")
        self.expect(";")
        self.declare_type(name)
        return A.TypedefDecl(name, tr, start.value == "type", span=start.span)

    def parse_struct(self) -> A.StructDecl:
        start = self.advance()
        kind = str(start.value)
        name, _ = self.expect_name(f"a {kind} name")
        self.declare_type(name)
        tparams = self.parse_type_params()
        self.push_type_params(tparams)
        self.expect("{")
        fields: list[A.FieldDecl] = []
        while not self.accept("}"):
            annos = self.parse_annotations()
            ft = self.peek()
            tr = self.parse_typeref()
            fname, _ = self.expect_name("a field name")
            self.expect(";")
            f = A.FieldDecl(fname, tr, span=ft.span)
            f.annotations = annos
            fields.append(f)
        self.pop_type_params()
        return A.StructDecl(name, kind, fields, tparams, span=start.span)

    def parse_enum(self) -> A.EnumDecl:
        start = self.expect("enum")
        underlying = None
        if self.at("bit") or self.at("int") or (self.is_type_name(self.peek().value) and self.is_name(1)):
            underlying = self.parse_typeref()
        name, _ = self.expect_name("an enum name")
        self.declare_type(name)
        self.expect("{")
        members: list[str] = []
        values: list[Optional[A.Expression]] = []
        member_annos: list[list[A.Annotation]] = []
        while True:
            annos = self.parse_annotations()
            m, _ = self.expect_name("an enum member")
            val = None
            if self.accept("="):
                val = self.parse_expression()
            members.append(m)
            values.append(val)
            member_annos.append(annos)
            if self.accept("}"):
                break
            self.expect(",", "',' or '}'")
            if self.accept("}"):
                break
        return A.EnumDecl(name, members, underlying, values, member_annos, span=start.span)

    def _id_list_decl(self) -> list[str]:
        self.expect("{")
        names: list[str] = []
        while True:
            names.append(self.expect_name()[0])
            if self.accept("}"):
                return names
            self.expect(",", "',' or '}'")
            if self.accept("}"):
                return names

    def parse_error_decl(self) -> A.ErrorDecl:
        start = self.advance()
        return A.ErrorDecl("error", self._id_list_decl(), span=start.span)

    def parse_match_kind(self) -> A.MatchKindDecl:
        start = self.advance()
        return A.MatchKindDecl("match_kind", self._id_list_decl(), span=start.span)

    def parse_value_set(self) -> A.ValueSetDecl:
        start = self.expect("value_set")
        self.expect("<")
        elem = self.parse_type_arg()
        self.expect_close_angle()
        self.expect("(")
        size = self.parse_expression()
        self.expect(")")
        name, _ = self.expect_name()
        self.expect(";")
        return A.ValueSetDecl(name, elem, size, span=start.span)

    def parse_extern(self) -> A.Decl:
        start = self.expect("extern")
        annos = self.parse_annotations()
        t = self.peek()
        is_object = False
        if self.is_name() and t.value not in BASE_TYPE_WORDS:
            if self.at_op("{", 1):
                is_object = True
            elif self.at_op("<", 1):
                # Skip the angle brackets and look for '{'.
                depth = 0
                k = 1
                while True:
                    tk = self.peek(k)
                    if tk.kind == "eof":
                        break
                    if tk.kind == "op" and tk.value == "<":
                        depth += 1
                    elif tk.kind == "op" and tk.value == ">":
                        depth -= 1
                        if depth == 0:
                            is_object = self.at_op("{", k + 1)
                            break
                    k += 1
        if is_object:
            name, _ = self.expect_name("an extern name")
            self.declare_type(name)
            tparams = self.parse_type_params()
            self.push_type_params(tparams)
            self.expect("{")
            methods: list[A.Method] = []
            while not self.accept("}"):
                mannos = self.parse_annotations()
                mt = self.peek()
                abstract = False
                if self.at("abstract"):
                    self.advance()
                    abstract = True
                if mt.kind == "id" and mt.value == name and self.at_op("(", 1):
                    self.advance()
                    params = self.parse_params()
                    self.expect(";")
                    m = A.Method(name, None, [], params, span=mt.span)
                else:
                    rt = self.parse_typeref(allow_unknown=True)
                    mname, _ = self.expect_name("a method name")
                    mtp = self.parse_type_params()
                    self.push_type_params(mtp)
                    params = self.parse_params()
                    self.pop_type_params()
                    self.expect(";")
                    m = A.Method(mname, rt, mtp, params, abstract, span=mt.span)
                m.annotations = mannos
                methods.append(m)
            self.pop_type_params()
            d: A.Decl = A.ExternDecl(name, tparams, methods, span=start.span)
        else:
            rt = self.parse_typeref(allow_unknown=True)
            fname, _ = self.expect_name("a function name")
            tparams = self.parse_type_params()
            self.push_type_params(tparams)
            params = self.parse_params()
            self.pop_type_params()
            self.expect(";")
            d = A.ExternFunctionDecl(fname, rt, tparams, params, span=start.span)
        d.annotations = annos
        return d

    def parse_action(self) -> A.ActionDecl:
        start = self.expect("action")
        name, _ = self.expect_name("an action name")
        params = self.parse_params()
        body = self.parse_block()
        return A.ActionDecl(name, params, body, span=start.span)

    def parse_function_or_instance(self, top: bool) -> A.Decl:
        """``T name(...) {...}`` (function), ``T(args) name;`` (instance) or,
        inside blocks, ``T name [= e];`` (variable)."""
        start = self.peek()
        # A function's return type may be one of its own type parameters,
        # unknown at this point: accept an unknown name when a name follows.
        allow_unknown = top and self.is_name() and (self.is_name(1) or self.at_op("<", 1))
        tr = self.parse_typeref(allow_unknown=allow_unknown)
        if self.at_op("("):
            args = self.parse_args()
            name, _ = self.expect_name("an instance name")
            init: list[A.Decl] = []
            if self.accept("="):
                self.expect("{")
                while not self.accept("}"):
                    init.append(self.parse_local_in_initializer())
            self.expect(";")
            return A.Instantiation(name, tr, args, init, span=start.span)
        name, _ = self.expect_name("a name")
        if self.at_op("<") or self.at_op("("):
            tparams = self.parse_type_params()
            self.push_type_params(tparams)
            if isinstance(tr, A.NamedTypeRef) and not self.is_type_name(tr.name) \
                    and tr.name not in tparams:
                raise P4Error(tr.span, f"unknown type {tr.name!r}")
            params = self.parse_params()
            body = self.parse_block()
            self.pop_type_params()
            return A.FunctionDecl(name, tr, tparams, params, body, span=start.span)
        if isinstance(tr, A.NamedTypeRef) and not self.is_type_name(tr.name):
            raise P4Error(tr.span, f"unknown type {tr.name!r}")
        init_e = None
        if self.accept("="):
            init_e = self.parse_expression()
        self.expect(";")
        return A.VarDecl(name, tr, init_e, span=start.span)

    def parse_local_in_initializer(self) -> A.Decl:
        annos = self.parse_annotations()
        if self.at("const"):
            d: A.Decl = self.parse_const()
        else:
            d = self.parse_function_or_instance(top=True)
        d.annotations = annos + d.annotations
        return d

    def parse_package(self) -> A.PackageTypeDecl:
        start = self.expect("package")
        name, _ = self.expect_name("a package name")
        self.declare_type(name)
        tparams = self.parse_type_params()
        self.push_type_params(tparams)
        params = self.parse_params()
        self.pop_type_params()
        self.expect(";")
        return A.PackageTypeDecl(name, tparams, params, span=start.span)

    def parse_parser(self) -> A.Decl:
        start = self.expect("parser")
        annos = self.parse_annotations()
        name, _ = self.expect_name("a parser name")
        self.declare_type(name)
        tparams = self.parse_type_params()
        self.push_type_params(tparams)
        params = self.parse_params()
        if self.accept(";"):
            self.pop_type_params()
            d: A.Decl = A.ParserTypeDecl(name, tparams, params, span=start.span)
            d.annotations = annos
            return d
        ctor: list[A.Param] = []
        if self.at_op("("):
            ctor = self.parse_params()
        self.expect("{")
        locals_: list[A.Decl] = []
        states: list[A.ParserState] = []
        while not self.accept("}"):
            lannos = self.parse_annotations()
            if self.at("state") and self.is_name(1):
                st = self.parse_state()
                st.annotations = lannos
                states.append(st)
                continue
            ld = self.parse_local_decl()
            ld.annotations = lannos + ld.annotations
            locals_.append(ld)
        self.pop_type_params()
        d = A.ParserDecl(name, tparams, params, ctor, locals_, states, span=start.span)
        d.annotations = annos
        return d

    def parse_local_decl(self) -> A.Decl:
        """Parser/control locals: constants, variables, instances, value sets,
        actions, tables."""
        if self.at("const"):
            return self.parse_const()
        if self.at("value_set"):
            return self.parse_value_set()
        if self.at("action"):
            return self.parse_action()
        if self.at("table"):
            return self.parse_table()
        if not self.starts_type():
            raise self.error(f"expected a declaration, found {self.describe(self.peek())}")
        return self.parse_function_or_instance(top=False)

    def parse_state(self) -> A.ParserState:
        start = self.expect("state")
        name, _ = self.expect_name("a state name")
        self.expect("{")
        stmts: list[A.Statement] = []
        transition = None
        while not self.accept("}"):
            if self.at("transition"):
                tt = self.advance()
                if self.at("select"):
                    sel = self.parse_select()
                    transition = A.Transition(None, sel, span=tt.span)
                    self.accept(";")
                else:
                    sname, _ = self.expect_name("a state name")
                    self.expect(";")
                    transition = A.Transition(sname, span=tt.span)
                if not self.at_op("}"):
                    raise self.error("the transition must be the last statement of a state")
                continue
            stmts.append(self.parse_statement())
        return A.ParserState(name, stmts, transition, span=start.span)

    def parse_select(self) -> A.SelectExpr:
        start = self.expect("select")
        self.expect("(")
        exprs: list[A.Expression] = []
        if not self.at_op(")"):
            exprs.append(self.parse_expression())
            while self.accept(","):
                exprs.append(self.parse_expression())
        self.expect(")")
        self.expect("{")
        cases: list[A.SelectCase] = []
        while not self.accept("}"):
            self.parse_annotations()
            ct = self.peek()
            ks = self.parse_keyset()
            self.expect(":")
            sname, _ = self.expect_name("a state name")
            self.expect(";")
            cases.append(A.SelectCase(ks, sname, span=ct.span))
        return A.SelectExpr(exprs, cases, span=start.span)

    def parse_keyset(self) -> A.Expression:
        """A keyset: ``(k1, k2)`` tuple or a simple keyset."""
        if self.at_op("("):
            def tuple_ks() -> A.Expression:
                st = self.expect("(")
                elems = [self.parse_simple_keyset()]
                while self.accept(","):
                    elems.append(self.parse_simple_keyset())
                self.expect(")")
                if not self.at_op(":"):
                    raise self.error("not a tuple keyset")
                if len(elems) == 1:
                    return elems[0]
                return A.ListExpr(elems, span=st.span)
            got = self.try_parse(tuple_ks)
            if got is not None:
                return got
        return self.parse_simple_keyset()

    def parse_simple_keyset(self) -> A.Expression:
        t = self.peek()
        if t.kind == "id" and t.value in ("default", "_") and (self.at_op(":", 1) or self.at_op(",", 1) or self.at_op(")", 1)):
            self.advance()
            return A.DefaultExpr(span=t.span)
        e = self.parse_expression()
        if self.at_op("&&&"):
            self.advance()
            m = self.parse_expression()
            return A.Mask(e, m, span=e.span)
        if self.at_op(".."):
            self.advance()
            hi = self.parse_expression()
            return A.Range(e, hi, span=e.span)
        return e

    def parse_control(self) -> A.Decl:
        start = self.expect("control")
        annos = self.parse_annotations()
        name, _ = self.expect_name("a control name")
        self.declare_type(name)
        tparams = self.parse_type_params()
        self.push_type_params(tparams)
        params = self.parse_params()
        if self.accept(";"):
            self.pop_type_params()
            d: A.Decl = A.ControlTypeDecl(name, tparams, params, span=start.span)
            d.annotations = annos
            return d
        ctor: list[A.Param] = []
        if self.at_op("("):
            ctor = self.parse_params()
        self.expect("{")
        locals_: list[A.Decl] = []
        body: Optional[A.BlockStmt] = None
        while not self.accept("}"):
            lannos = self.parse_annotations()
            if self.at("apply") and (self.at_op("{", 1) or self.at_op("@", 1)):
                if body is not None:
                    raise self.error("a control has only one apply block")
                self.advance()
                bannos = self.parse_annotations()
                body = self.parse_block()
                body.annotations = lannos + bannos
                continue
            ld = self.parse_local_decl()
            ld.annotations = lannos + ld.annotations
            locals_.append(ld)
        self.pop_type_params()
        if body is None:
            raise P4Error(start.span, f"control {name} has no apply block")
        d = A.ControlDecl(name, tparams, params, ctor, locals_, body, span=start.span)
        d.annotations = annos
        return d

    # ------------------------------------------------------------ tables
    def parse_table(self) -> A.TableDecl:
        start = self.expect("table")
        name, _ = self.expect_name("a table name")
        self.expect("{")
        props: list[A.TableProperty] = []
        while not self.accept("}"):
            annos = self.parse_annotations()
            pt = self.peek()
            is_const = bool(self.accept("const"))
            pname, _ = self.expect_name("a table property")
            if pname == "key":
                self.expect("=")
                self.expect("{")
                keys: list[A.KeyElement] = []
                while not self.accept("}"):
                    kt = self.peek()
                    e = self.parse_expression()
                    self.expect(":")
                    mk, _ = self.expect_name("a match kind")
                    kannos = self.parse_annotations()
                    self.expect(";")
                    keys.append(A.KeyElement(e, mk, kannos, span=kt.span))
                value: object = keys
            elif pname == "actions":
                self.expect("=")
                self.expect("{")
                acts: list[A.ActionRef] = []
                while not self.accept("}"):
                    aannos = self.parse_annotations()
                    ar = self.parse_action_ref()
                    ar.annotations = aannos + ar.annotations
                    self.expect(";")
                    acts.append(ar)
                value = acts
            elif pname == "default_action":
                self.expect("=")
                value = self.parse_action_ref()
                self.expect(";")
            elif pname == "entries":
                self.expect("=")
                self.expect("{")
                entries: list[A.TableEntry] = []
                while not self.accept("}"):
                    entries.append(self.parse_entry())
                value = entries
            else:
                self.expect("=")
                value = self.parse_expression()
                self.expect(";")
            props.append(A.TableProperty(pname, value, is_const, annos, span=pt.span))
        return A.TableDecl(name, props, span=start.span)

    def parse_action_ref(self) -> A.ActionRef:
        t = self.peek()
        top = bool(self.at_op(".") and self.advance())
        name, span = self.expect_name("an action name")
        args: list[A.Argument] = []
        if self.at_op("("):
            args = self.parse_args()
        ref = A.ActionRef(name, args, span=t.span)
        ref.top_level = top
        return ref

    def parse_entry(self) -> A.TableEntry:
        annos = self.parse_annotations()
        t = self.peek()
        is_const = bool(self.accept("const"))
        priority_expr: Optional[A.Expression] = None
        if self.at("priority") and self.at_op("=", 1):
            self.advance()
            self.advance()
            priority_expr = self.parse_expression()
            self.expect(":")
        ks = self.parse_keyset()
        keys = ks.elems if isinstance(ks, A.ListExpr) else [ks]
        self.expect(":")
        ar = self.parse_action_ref()
        annos += self.parse_annotations()
        self.expect(";")
        e = A.TableEntry(keys, ar, None, is_const, annos, span=t.span)
        if priority_expr is not None:
            e.annotations.append(A.Annotation("__priority_expr", [priority_expr], span=priority_expr.span))
        return e

    # ------------------------------------------------------------ statements
    def parse_block(self) -> A.BlockStmt:
        start = self.expect("{")
        stmts: list[A.Statement] = []
        while not self.accept("}"):
            if self.peek().kind == "eof":
                raise self.error("expected '}', found end of input")
            stmts.append(self.parse_statement())
        return A.BlockStmt(stmts, span=start.span)

    def parse_statement(self) -> A.Statement:
        self.enter()
        try:
            return self._parse_statement()
        finally:
            self.depth -= 1

    def _parse_statement(self) -> A.Statement:
        annos = self.parse_annotations()
        t = self.peek()
        v = t.value if t.kind in ("id", "op") else None
        if v == "{" and t.kind == "op":
            b = self.parse_block()
            b.annotations = annos
            return b
        if v == ";" and t.kind == "op":
            self.advance()
            return A.EmptyStmt(span=t.span)
        if t.kind == "id":
            if v == "if":
                self.advance()
                self.expect("(")
                cond = self.parse_expression()
                self.expect(")")
                then = self.parse_statement()
                els = None
                if self.accept("else"):
                    els = self.parse_statement()
                return A.IfStmt(cond, then, els, span=t.span)
            if v == "switch":
                return self.parse_switch()
            if v == "exit":
                self.advance()
                self.expect(";")
                return A.ExitStmt(span=t.span)
            if v == "return":
                self.advance()
                val = None
                if not self.at_op(";"):
                    val = self.parse_expression()
                self.expect(";")
                return A.ReturnStmt(val, span=t.span)
            if v == "const":
                return A.DeclStmt(self.parse_const(), span=t.span)
            if v == "for" and self.at_op("(", 1):
                return self.parse_for()
            if v in ("break", "continue") and self.at_op(";", 1):
                self.advance()
                self.advance()
                return A.BreakStmt(span=t.span) if v == "break" else A.ContinueStmt(span=t.span)
            if v == "while":
                raise self.error("'while' statements are not supported")
            if self._at_var_decl():
                d = self.parse_function_or_instance(top=False)
                if not isinstance(d, A.VarDecl):
                    raise P4Error(d.span, "only variables and constants may be declared here")
                d.annotations = annos
                return A.DeclStmt(d, span=t.span)
        st = self.parse_simple_statement()
        self.expect(";")
        return st

    def parse_simple_statement(self) -> A.Statement:
        """An assignment or a call, without the terminating ';'."""
        lhs = self.parse_expression()
        op = self.peek()
        if op.kind == "op" and op.value == "=":
            self.advance()
            rhs = self.parse_expression()
            return A.AssignStmt(lhs, rhs, span=lhs.span)
        if op.kind == "op" and op.value in _COMPOUND_ASSIGN:
            self.advance()
            rhs = self.parse_expression()
            bop = _COMPOUND_ASSIGN[str(op.value)]
            return A.AssignStmt(lhs, A.Binary(bop, _clone_lvalue(lhs), rhs, span=op.span), span=lhs.span)
        if not isinstance(lhs, A.MethodCall):
            raise self.error(f"expected '=' or a call, found {self.describe(op)}", op)
        return A.CallStmt(lhs, span=lhs.span)

    def parse_for(self) -> A.Statement:
        start = self.expect("for")
        self.expect("(")
        # for (T v in collection)
        annos: list[A.Annotation] = []
        if self.at_op("@"):
            annos = self.parse_annotations()
        if self.starts_type():
            def loop_var() -> tuple[A.TypeRef, str, Span]:
                tr = self.parse_typeref()
                name, nspan = self.expect_name("a loop variable")
                if not self.at("in"):
                    raise self.error("not a for-in loop")
                return tr, name, nspan
            head = self.try_parse(loop_var)
            if head is not None:
                tr, name, nspan = head
                self.advance()  # "in"
                coll = self.parse_expression()
                if self.at_op(".."):
                    self.advance()
                    hi = self.parse_expression()
                    coll = A.Range(coll, hi, span=coll.span)
                self.expect(")")
                var = A.VarDecl(name, tr, None, span=nspan)
                var.annotations = annos
                body = self.parse_statement()
                return A.ForInStmt(var, coll, body, span=start.span)
        init: list[A.Statement] = []
        while not self.at_op(";"):
            t = self.peek()
            if self.peek().kind == "id" and self._at_var_decl():
                tr = self.parse_typeref()
                name, nspan = self.expect_name("a variable name")
                val = None
                if self.accept("="):
                    val = self.parse_expression()
                init.append(A.DeclStmt(A.VarDecl(name, tr, val, span=t.span), span=t.span))
            else:
                init.append(self.parse_simple_statement())
            if not self.accept(","):
                break
        self.expect(";")
        cond = None if self.at_op(";") else self.parse_expression()
        self.expect(";")
        updates: list[A.Statement] = []
        while not self.at_op(")"):
            updates.append(self.parse_simple_statement())
            if not self.accept(","):
                break
        self.expect(")")
        body = self.parse_statement()
        return A.ForStmt(init, cond, updates, body, span=start.span)

    def _at_var_decl(self) -> bool:
        t = self.peek()
        if t.value in BASE_TYPE_WORDS:
            return t.value != "error" or self.is_name(1)
        if not self.is_type_name(t.value):
            return False
        nxt = self.peek(1)
        if nxt.kind == "id":
            return True
        if nxt.kind == "op" and nxt.value in ("<", "["):
            return True
        return False

    def parse_switch(self) -> A.SwitchStmt:
        start = self.expect("switch")
        self.expect("(")
        e = self.parse_expression()
        self.expect(")")
        self.expect("{")
        cases: list[A.SwitchCase] = []
        while not self.accept("}"):
            ct = self.peek()
            if ct.kind == "id" and ct.value == "default" and self.at_op(":", 1):
                self.advance()
                label: A.Expression = A.DefaultExpr(span=ct.span)
            else:
                label = self.parse_expression()
            self.expect(":")
            body = self.parse_block() if self.at_op("{") else None
            cases.append(A.SwitchCase(label, body, span=ct.span))
        return A.SwitchStmt(e, cases, span=start.span)

    # ------------------------------------------------------------ expressions
    def parse_args(self) -> list[A.Argument]:
        self.expect("(")
        args: list[A.Argument] = []
        if self.accept(")"):
            return args
        while True:
            t = self.peek()
            if self.is_name() or (t.kind == "id" and t.value in ("default",)):
                if self.at_op("=", 1):
                    self.advance()
                    self.advance()
                    val = self._arg_value()
                    args.append(A.Argument(val, str(t.value), span=t.span))
                    if self.accept(")"):
                        return args
                    self.expect(",", "',' or ')'")
                    continue
            args.append(A.Argument(self._arg_value(), span=t.span))
            if self.accept(")"):
                return args
            self.expect(",", "',' or ')'")

    def _arg_value(self) -> A.Expression:
        t = self.peek()
        if t.kind == "id" and t.value == "_" and not self.is_type_name("_") \
                and (self.at_op(",", 1) or self.at_op(")", 1)):
            self.advance()
            return A.DefaultExpr(span=t.span)
        return self.parse_expression()

    def parse_expression(self) -> A.Expression:
        self.enter()
        cond = self.parse_binary(0)
        if self.at_op("?"):
            self.advance()
            a = self.parse_expression()
            self.expect(":")
            b = self.parse_expression()
            cond = A.Ternary(cond, a, b, span=cond.span)
        self.depth -= 1
        return cond

    def enter(self) -> None:
        """Count nesting so absurdly deep input is a diagnostic, not a crash."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(f"nesting deeper than {MAX_NESTING} levels")

    def _binary_op(self) -> Optional[tuple[str, int]]:
        """The binary operator at the cursor and how many tokens it takes
        (``>>`` is two adjacent ``>`` tokens)."""
        t = self.peek()
        if t.kind != "op":
            return None
        v = str(t.value)
        if v == ">":
            n = self.peek(1)
            if n.kind == "op" and n.value == ">" and n.span.line == t.span.line and n.span.col == t.end:
                return ">>", 2
            return ">", 1
        if v in _LEVEL_OF:
            return v, 1
        return None

    def parse_binary(self, min_level: int) -> A.Expression:
        """Precedence climbing over the binary operator levels (all left-associative)."""
        left = self.parse_unary()
        while True:
            got = self._binary_op()
            if got is None:
                return left
            op, n = got
            level = _LEVEL_OF[op]
            if level < min_level:
                return left
            optok = self.peek()
            self.pos += n
            right = self.parse_binary(level + 1)
            left = A.Binary(op, left, right, span=optok.span)

    def parse_unary(self) -> A.Expression:
        t = self.peek()
        if t.kind == "op" and t.value in ("-", "!", "~", "+"):
            self.advance()
            e = self.parse_unary()
            return A.Unary(str(t.value), e, span=t.span)
        if t.kind == "op" and t.value == "(":
            cast = self.try_parse(self._cast_head)
            if cast is not None:
                e = self.parse_unary()
                return A.Cast(cast, e, span=t.span)
        return self.parse_postfix(self.parse_primary())

    def _cast_head(self) -> A.TypeRef:
        self.expect("(")
        if not self.starts_type() or (self.peek().kind == "id" and self.peek().value in ("error",) and self.at_op(".", 1)):
            raise self.error("not a cast")
        tr = self.parse_typeref()
        self.expect(")")
        return tr

    def parse_primary(self) -> A.Expression:
        t = self.peek()
        span = t.span
        if t.kind == "int":
            self.advance()
            return _int_lit(t)
        if t.kind == "str":
            self.advance()
            return A.StringLit(str(t.value), span=span)
        if t.kind == "op":
            v = t.value
            if v == "(":
                self.advance()
                e = self.parse_expression()
                self.expect(")")
                return e
            if v == "{#}":
                self.advance()
                return A.InvalidHeaderExpr(span=span)
            if v == "{":
                return self.parse_brace_expr(None)
            if v == "." and self.peek(1).kind == "id":
                self.advance()
                nt = self.advance()
                if self.is_type_name(nt.value):
                    tr = self._named_type_rest(str(nt.value), span, True) \
                        if self._type_args_follow() else A.NamedTypeRef(str(nt.value), [], True, span=span)
                    return self._after_type_name(tr)
                return A.PathExpr(str(nt.value), True, span=span)
            raise self.error(f"expected an expression, found {self.describe(t)}", t)
        if t.kind == "id":
            v = t.value
            if v == "true" or v == "false":
                self.advance()
                return A.BoolLit(v == "true", span=span)
            if v in ("default", "_") and not self.is_type_name(v):
                self.advance()
                return A.DefaultExpr(span=span)
            if v == "error" and self.at_op(".", 1):
                self.advance()
                return A.TypeNameExpr(A.BaseTypeRef("error", span=span), span=span)
            if v in ("bit", "int", "varbit", "bool", "tuple"):
                tr = self.parse_typeref(allow_stack=False)
                return self._after_type_name(tr)
            if v in RESERVED:
                raise self.error(f"expected an expression, found {self.describe(t)}", t)
            if self.is_type_name(v):
                self.advance()
                if self._type_args_follow():
                    tr = self._named_type_rest(str(v), span, False)
                else:
                    tr = A.NamedTypeRef(str(v), [], False, span=span)
                return self._after_type_name(tr)
            self.advance()
            return A.PathExpr(str(v), span=span)
        raise self.error(f"expected an expression, found {self.describe(t)}", t)

    def _type_args_follow(self) -> bool:
        """After a type name: is ``<`` the start of type arguments?"""
        if not self.at_op("<"):
            return False
        saved = self.pos
        try:
            self.advance()
            self.parse_type_arg()
            while self.accept(","):
                self.parse_type_arg()
            self.expect_close_angle()
            return True
        except P4Error:
            return False
        finally:
            self.pos = saved

    def _after_type_name(self, tr: A.TypeRef) -> A.Expression:
        if self.at_op("("):
            args = self.parse_args()
            return A.ConstructorCall(tr, args, span=tr.span)
        if self.at_op("{") and not isinstance(tr, A.BaseTypeRef):
            return self.parse_brace_expr(tr)
        return A.TypeNameExpr(tr, span=tr.span)

    def parse_brace_expr(self, tr: Optional[A.TypeRef]) -> A.Expression:
        start = self.expect("{")
        span = tr.span if tr is not None else start.span
        if self.accept("}"):
            if tr is not None:
                return A.StructExpr(tr, [], span=span)
            return A.ListExpr([], span=span)
        if self.is_name() and self.at_op("=", 1):
            fields: list[tuple[str, A.Expression]] = []
            while True:
                name, _ = self.expect_name("a field name")
                self.expect("=")
                fields.append((name, self.parse_expression()))
                if self.accept("}"):
                    break
                self.expect(",", "',' or '}'")
                if self.accept("}"):
                    break
            return A.StructExpr(tr, fields, span=span)
        if tr is not None:
            raise self.error("expected 'field = value' in a typed initializer")
        elems = [self.parse_expression()]
        while self.accept(","):
            if self.at_op("}"):
                break
            elems.append(self.parse_expression())
        self.expect("}")
        return A.ListExpr(elems, span=span)

    def parse_postfix(self, e: A.Expression) -> A.Expression:
        while True:
            t = self.peek()
            if t.kind != "op":
                return e
            v = t.value
            if v == ".":
                self.advance()
                nt = self.peek()
                if nt.kind != "id":
                    raise self.error(f"expected a member name, found {self.describe(nt)}", nt)
                self.advance()
                e = A.Member(e, str(nt.value), span=e.span, name_span=nt.span)
            elif v == "[":
                self.advance()
                a = self.parse_expression()
                if self.accept(":"):
                    b = self.parse_expression()
                    self.expect("]")
                    e = A.Slice(e, a, b, span=t.span)
                elif self.accept("+:"):
                    w = self.parse_expression()
                    self.expect("]")
                    # e[base +: width] == e[base + width - 1 : base]
                    hi = A.Binary("-", A.Binary("+", a, w, span=a.span), A.IntLit(1, span=a.span), span=a.span)
                    e = A.Slice(e, hi, _clone_lvalue(a), span=t.span)
                else:
                    self.expect("]")
                    e = A.Index(e, a, span=t.span)
            elif v == "(":
                args = self.parse_args()
                e = A.MethodCall(e, [], args, span=e.span)
            elif v == "<" and isinstance(e, (A.PathExpr, A.Member)):
                targs = self.try_parse(self._call_type_args)
                if targs is None:
                    return e
                args = self.parse_args()
                e = A.MethodCall(e, targs, args, span=e.span)
            else:
                return e

    def _call_type_args(self) -> list[A.TypeRef]:
        self.expect("<")
        targs = [self.parse_type_arg()]
        while self.accept(","):
            targs.append(self.parse_type_arg())
        self.expect_close_angle()
        if not self.at_op("("):
            raise self.error("not a type argument list")
        return targs


def _type_literal(e: A.Expression) -> A.Expression:
    """Annotation bodies are never type-checked, but their literal
    arguments get their obvious types so consumers can read them."""
    if isinstance(e, A.IntLit):
        if e.width is not None:
            if e.width > 1 << 16:
                raise P4Error(e.span, "literal width is too large")
            e.type = BitsType(e.width, e.signed)
            e.value = wrap(e.value, e.type)
        else:
            e.type = INT
    elif isinstance(e, A.StringLit):
        e.type = STRING
    elif isinstance(e, A.BoolLit):
        e.type = BOOL
    return e


def _int_lit(t: Token) -> A.IntLit:
    width, signed, value, base = t.value  # type: ignore[misc]
    return A.IntLit(value, width, signed, base, span=t.span)


def _clone_lvalue(e: A.Expression) -> A.Expression:
    """A structural copy of a (side-effect free) expression, for desugaring
    ``a op= b`` into ``a = a op b``."""
    import copy
    return copy.deepcopy(e)


def parse_tokens(toks: list[Token]) -> A.Program:
    """Parse a whole program."""
    return Parser(toks).parse_program()
