"""The P4_16 syntax tree, which the type checker turns into the typed IR.

The parser builds these nodes; the type checker (``typecheck.py``) then
annotates them in place, so the same classes are the IR that the interpreter
and the P4Info generator consume:

* every ``Expression`` gets ``type`` (a ``types.P4Type``);
* every ``PathExpr`` gets ``ref`` (the declaration it names);
* every ``MethodCall`` gets ``kind`` and ``target`` (what is called);
* compile-time constant expressions are folded to ``IntLit``/``BoolLit``/
  ``StringLit`` (with the folded value's type), references to enum and error
  members become ``EnumMember``/``ErrorMember``;
* implicit casts the language allows are made explicit as ``Cast`` nodes,
  so operands of binary operators always have the same type;
* tables get ``keys``/``actions``/``default_action``/``entries`` etc. resolved.

``docs/p4switch-ir.md`` is the contract: what each consumer may rely on.
Every node has ``span`` (file, line, column in the original source, after
preprocessing has been undone).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Union

from .types import P4Type


@dataclass(frozen=True, slots=True)
class Span:
    """A position in the original (not preprocessed) source: 1-based line and column."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


NOWHERE = Span("<builtin>", 0, 0)


@dataclass(eq=False, kw_only=True)
class Node:
    """Base of every node; ``span`` points at the node's first token."""

    span: Span = NOWHERE


@dataclass(eq=False)
class Annotation(Node):
    """``@name`` / ``@name(expr, ...)`` / ``@name[k=v, ...]``.

    ``args`` holds the parsed expressions when the body parses as an
    expression list (``@name("x")``, ``@priority(3)``); ``kv`` holds
    ``key=value`` pairs of a structured annotation; ``raw`` is the body's
    token text joined by spaces, kept for annotations with free-form bodies
    (``@pragma``).
    """

    name: str
    args: list["Expression"] = field(default_factory=list)
    kv: dict[str, "Expression"] = field(default_factory=dict)
    raw: str = ""

    def string_arg(self) -> Optional[str]:
        """The first argument when it is a string literal (``@name("x")``)."""
        if self.args and isinstance(self.args[0], StringLit):
            return self.args[0].value
        return None


def find_annotation(annos: list[Annotation], name: str) -> Optional[Annotation]:
    for a in annos:
        if a.name == name:
            return a
    return None


# ==========================================================================
# Type syntax (what the programmer wrote; the checker resolves it to P4Type)


@dataclass(eq=False)
class TypeRef(Node):
    """Base of written types; ``resolved`` is filled by the type checker."""

    resolved: Optional[P4Type] = field(default=None, kw_only=True)


@dataclass(eq=False)
class BaseTypeRef(TypeRef):
    """``bool``, ``error``, ``match_kind``, ``string``, ``void``, ``int``,
    ``bit<W>``, ``int<W>``, ``varbit<W>`` (``width`` is an expression or None)."""

    name: str
    width: Optional["Expression"] = None


@dataclass(eq=False)
class NamedTypeRef(TypeRef):
    """A type by name, possibly with type arguments: ``H``, ``register<bit<8>>``,
    ``.H`` (top-level scope)."""

    name: str
    args: list[TypeRef] = field(default_factory=list)
    top_level: bool = False


@dataclass(eq=False)
class StackTypeRef(TypeRef):
    """``T[size]``."""

    elem: TypeRef
    size: "Expression"


@dataclass(eq=False)
class TupleTypeRef(TypeRef):
    """``tuple<T1, T2>`` (also ``list<T>`` which is treated as a tuple)."""

    elems: list[TypeRef]


@dataclass(eq=False)
class DontCareTypeRef(TypeRef):
    """``_`` used as a type argument."""


# ==========================================================================
# Expressions


@dataclass(eq=False)
class Expression(Node):
    """Base of expressions; ``type`` is filled by the type checker."""

    type: Optional[P4Type] = field(default=None, kw_only=True)


@dataclass(eq=False)
class IntLit(Expression):
    """Integer literal. ``width``/``signed`` come from the literal's prefix
    (``8w5``, ``4s3``) before checking; after checking ``type`` is the width
    the value was given (``BitsType``) or ``IntType`` when it stayed
    infinite-precision. ``value`` is already reduced to the width
    (two's complement for signed)."""

    value: int
    width: Optional[int] = None
    signed: bool = False
    base: int = 10  # radix used in the source, for printing only


@dataclass(eq=False)
class BoolLit(Expression):
    value: bool


@dataclass(eq=False)
class StringLit(Expression):
    value: str


@dataclass(eq=False)
class PathExpr(Expression):
    """A name. ``ref`` is the declaration it resolves to (``Param``,
    ``VarDecl``, ``ConstDecl``, ``Instantiation``, ``TableDecl``,
    ``ActionDecl``, ``FunctionDecl``, ``ExternFunctionDecl``, ``ValueSetDecl``,
    ``ParserState`` ...)."""

    name: str
    top_level: bool = False  # written with a leading dot
    ref: Optional[Node] = field(default=None, kw_only=True)


@dataclass(eq=False)
class TypeNameExpr(Expression):
    """A type used in expression position (``MyEnum`` in ``MyEnum.A``, or a
    type used as a constructor ``MyParser()``)."""

    typeref: TypeRef


@dataclass(eq=False)
class Member(Expression):
    """``expr.name``: struct/header field, stack property (``next``, ``last``,
    ``size``, ``lastIndex``), apply result (``hit``, ``miss``,
    ``action_run``) or a method (then the node is the ``func`` of a
    ``MethodCall``)."""

    expr: Expression
    name: str
    # where the member name itself is written (``span`` is the whole
    # expression's start); diagnostics about the name point here
    name_span: Optional[Span] = field(default=None, kw_only=True, compare=False)


@dataclass(eq=False)
class EnumMember(Expression):
    """Resolved ``E.m`` for an enum type; ``type`` is the ``EnumType``.
    ``value`` is the numeric value for serializable enums, else None."""

    enum_name: str
    member: str
    value: Optional[int] = None


@dataclass(eq=False)
class ErrorMember(Expression):
    """Resolved ``error.m``; ``type`` is ``ErrorType``."""

    member: str


@dataclass(eq=False)
class Index(Expression):
    """``stack[index]``."""

    expr: Expression
    index: Expression


@dataclass(eq=False)
class Slice(Expression):
    """``expr[hi:lo]`` — after checking ``hi``/``lo`` are ``IntLit``s."""

    expr: Expression
    hi: Expression
    lo: Expression


@dataclass(eq=False)
class Unary(Expression):
    """``-e``, ``~e``, ``!e`` (and ``+e`` which the checker removes)."""

    op: str
    expr: Expression


@dataclass(eq=False)
class Binary(Expression):
    """Binary operator. ``op`` is one of ``* / % + - |+| |-| << >> < <= > >=
    == != & ^ | && || ++``. Keyset operators ``&&&`` and ``..`` are ``Mask``
    and ``Range``."""

    op: str
    left: Expression
    right: Expression


@dataclass(eq=False)
class Mask(Expression):
    """``value &&& mask`` (keysets only); ``type`` is ``SetType``."""

    value: Expression
    mask: Expression


@dataclass(eq=False)
class Range(Expression):
    """``lo .. hi`` (keysets only); ``type`` is ``SetType``."""

    lo: Expression
    hi: Expression


@dataclass(eq=False)
class DefaultExpr(Expression):
    """``default`` or ``_`` (keysets, don't-care arguments)."""


@dataclass(eq=False)
class Cast(Expression):
    """``(T) e``. The checker also inserts casts for implicit conversions;
    ``implicit`` tells which."""

    target: TypeRef
    expr: Expression
    implicit: bool = False


@dataclass(eq=False)
class Ternary(Expression):
    cond: Expression
    then: Expression
    els: Expression


@dataclass(eq=False)
class Argument(Node):
    """A call argument, optionally named (``f(x = 1)``); ``value`` may be
    ``DefaultExpr`` for ``_``."""

    value: Expression
    name: Optional[str] = None


@dataclass(eq=False)
class MethodCall(Expression):
    """A call ``func<type_args>(args)``.

    After checking:
    * ``kind`` is one of ``"action"``, ``"function"``, ``"extern_function"``,
      ``"extern_method"``, ``"table_apply"``, ``"block_apply"`` (parser or
      control instance / sub-parser / sub-control), ``"builtin"`` (header
      ``isValid/setValid/setInvalid``, union ``isValid``, stack
      ``push_front/pop_front``, ``minSizeInBits`` etc.);
    * ``target`` is the callee declaration (``ActionDecl``, ``FunctionDecl``,
      ``ExternFunctionDecl``, ``Method`` of the extern, ``TableDecl``,
      ``Instantiation``/``Param`` of the block) or the builtin's name;
    * ``args`` are in parameter order (named arguments reordered, optional
      parameters omitted), and ``params`` lists the matching ``Param``s;
    * ``type_args`` holds the inferred type arguments as ``P4Type``s in
      ``resolved_type_args``.
    """

    func: Expression
    type_args: list[TypeRef] = field(default_factory=list)
    args: list[Argument] = field(default_factory=list)
    kind: str = field(default="", kw_only=True)
    target: Any = field(default=None, kw_only=True)
    params: list["Param"] = field(default_factory=list, kw_only=True)
    resolved_type_args: list[P4Type] = field(default_factory=list, kw_only=True)


@dataclass(eq=False)
class ConstructorCall(Expression):
    """``T(args)`` as an expression (an anonymous instance: package
    arguments ``V1Switch(MyParser(), ...)``, extern constructors in
    initialisers). ``decl`` is the instantiated declaration."""

    typeref: TypeRef
    args: list[Argument] = field(default_factory=list)
    decl: Optional[Node] = field(default=None, kw_only=True)


@dataclass(eq=False)
class ListExpr(Expression):
    """``{a, b, c}``: a tuple/list, or — when its expected type is a struct
    or header — an initialiser for that type (``type`` says which)."""

    elems: list[Expression]


@dataclass(eq=False)
class StructExpr(Expression):
    """``{f1 = e1, f2 = e2}`` or ``T {f1 = e1}``; ``fields`` in the order written,
    the checker checks them against ``type`` (struct or header)."""

    typeref: Optional[TypeRef]
    fields: list[tuple[str, Expression]]


@dataclass(eq=False)
class InvalidHeaderExpr(Expression):
    """``{#}``: an invalid header (or union) of the expected type."""


# ==========================================================================
# Statements


@dataclass(eq=False)
class Statement(Node):
    pass


@dataclass(eq=False)
class AssignStmt(Statement):
    lhs: Expression
    rhs: Expression


@dataclass(eq=False)
class CallStmt(Statement):
    call: MethodCall


@dataclass(eq=False)
class BlockStmt(Statement):
    stmts: list[Statement]
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class IfStmt(Statement):
    cond: Expression
    then: Statement
    els: Optional[Statement] = None


@dataclass(eq=False)
class SwitchCase(Node):
    """One ``label: block`` (block None for fall-through ``label:``).
    Labels are action names (``PathExpr`` resolved to ``ActionDecl``),
    expressions, or ``DefaultExpr``."""

    label: Expression
    body: Optional[BlockStmt]


@dataclass(eq=False)
class SwitchStmt(Statement):
    """``switch (t.apply().action_run)`` or ``switch (expr)`` on bit/int/enum."""

    expr: Expression
    cases: list[SwitchCase]


@dataclass(eq=False)
class ExitStmt(Statement):
    pass


@dataclass(eq=False)
class ReturnStmt(Statement):
    value: Optional[Expression] = None


@dataclass(eq=False)
class EmptyStmt(Statement):
    pass


@dataclass(eq=False)
class ForStmt(Statement):
    """``for (init; cond; updates) body`` — ``init`` holds ``DeclStmt``s and
    assignments/calls, ``updates`` assignments/calls; ``cond`` None means
    true. The loop variables live in a scope around the loop."""

    init: list[Statement]
    cond: Optional[Expression]
    updates: list[Statement]
    body: Statement


@dataclass(eq=False)
class ForInStmt(Statement):
    """``for (T v in collection) body``. ``collection`` is a ``Range`` (both
    ends inclusive, of ``var``'s type) or an expression of tuple/stack type
    whose elements are assigned to ``var`` in order."""

    var: "VarDecl"
    collection: Expression
    body: Statement


@dataclass(eq=False)
class BreakStmt(Statement):
    pass


@dataclass(eq=False)
class ContinueStmt(Statement):
    pass


@dataclass(eq=False)
class DeclStmt(Statement):
    """A local variable or constant declared inside a block."""

    decl: Union["VarDecl", "ConstDecl"]


# ==========================================================================
# Declarations


@dataclass(eq=False)
class Decl(Node):
    """Base of named declarations."""

    name: str
    annotations: list[Annotation] = field(default_factory=list, kw_only=True)


@dataclass(eq=False)
class Param(Decl):
    """A parameter. ``direction`` is ``"in"``, ``"out"``, ``"inout"`` or ``""``
    (directionless: action data / constructor / compile-time)."""

    direction: str
    typeref: TypeRef
    default: Optional[Expression] = None
    optional: bool = False

    @property
    def type(self) -> Optional[P4Type]:
        return self.typeref.resolved


@dataclass(eq=False)
class ConstDecl(Decl):
    """``const T name = value;`` — ``value`` folded to a literal when possible."""

    typeref: TypeRef
    value: Expression


@dataclass(eq=False)
class VarDecl(Decl):
    """``T name [= init];`` (control/parser locals, block locals)."""

    typeref: TypeRef
    init: Optional[Expression] = None


@dataclass(eq=False)
class TypedefDecl(Decl):
    """``typedef T name;`` (alias) or ``type T name;`` (``new_type`` True)."""

    typeref: TypeRef
    new_type: bool = False


@dataclass(eq=False)
class FieldDecl(Decl):
    typeref: TypeRef


@dataclass(eq=False)
class StructDecl(Decl):
    """``header``, ``header_union`` or ``struct`` (``kind``)."""

    kind: str
    fields: list[FieldDecl]
    type_params: list[str] = field(default_factory=list)
    resolved: Optional[P4Type] = field(default=None, kw_only=True)


@dataclass(eq=False)
class EnumDecl(Decl):
    """``enum [bit<W>] name { A [= v], ... }``."""

    members: list[str]
    underlying: Optional[TypeRef] = None
    values: list[Optional[Expression]] = field(default_factory=list)
    member_annotations: list[list[Annotation]] = field(default_factory=list)
    resolved: Optional[P4Type] = field(default=None, kw_only=True)


@dataclass(eq=False)
class ErrorDecl(Decl):
    """``error { ... }`` (name is ``"error"``)."""

    members: list[str]


@dataclass(eq=False)
class MatchKindDecl(Decl):
    """``match_kind { ... }`` (name is ``"match_kind"``)."""

    members: list[str]


@dataclass(eq=False)
class Method(Decl):
    """An extern method or constructor prototype (constructor: ``return_type`` None)."""

    return_type: Optional[TypeRef]
    type_params: list[str]
    params: list[Param]
    abstract: bool = False


@dataclass(eq=False)
class ExternDecl(Decl):
    """``extern Name<T...> { ctors; methods; }``."""

    type_params: list[str]
    methods: list[Method]

    def constructors(self) -> list[Method]:
        return [m for m in self.methods if m.return_type is None]

    def methods_named(self, name: str) -> list[Method]:
        return [m for m in self.methods if m.name == name and m.return_type is not None]


@dataclass(eq=False)
class ExternFunctionDecl(Decl):
    """``extern R f<T...>(params);``."""

    return_type: TypeRef
    type_params: list[str]
    params: list[Param]


@dataclass(eq=False)
class FunctionDecl(Decl):
    """``R f<T...>(params) { body }``."""

    return_type: TypeRef
    type_params: list[str]
    params: list[Param]
    body: BlockStmt


@dataclass(eq=False)
class ActionDecl(Decl):
    """``action a(params) { body }``; directionless parameters are action data
    (supplied by the control plane) unless the call site binds them."""

    params: list[Param]
    body: BlockStmt


@dataclass(eq=False)
class KeyElement(Node):
    """``expr : match_kind`` with annotations (``@name`` gives the P4Info name)."""

    expr: Expression
    match_kind: str
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class ActionRef(Node):
    """An element of ``actions = { ... }`` or a ``default_action``: the action
    name with possibly some bound arguments. ``decl`` is set by the checker."""

    name: str
    args: list[Argument] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)
    decl: Optional[ActionDecl] = field(default=None, kw_only=True)
    top_level: bool = field(default=False, kw_only=True)  # written ``.name``


@dataclass(eq=False)
class TableEntry(Node):
    """One ``const entries`` row: ``keys`` (one keyset expression per key
    element, ``DefaultExpr`` for ``_``), the action, and the priority
    (explicit ``priority=`` / ``@priority`` or assigned by the checker when
    the table needs priorities; None otherwise)."""

    keys: list[Expression]
    action: ActionRef
    priority: Optional[int] = None
    is_const: bool = True
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class TableProperty(Node):
    """A table property as written. ``value`` is an ``Expression``, a list
    (keys, actions, entries), or an ``ActionRef`` (default_action)."""

    name: str
    value: Any
    is_const: bool = False
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class TableDecl(Decl):
    """``table t { ... }``. The checker fills the resolved fields below."""

    properties: list[TableProperty]
    keys: list[KeyElement] = field(default_factory=list, kw_only=True)
    actions: list[ActionRef] = field(default_factory=list, kw_only=True)
    default_action: Optional[ActionRef] = field(default=None, kw_only=True)
    default_action_const: bool = field(default=False, kw_only=True)
    entries: list[TableEntry] = field(default_factory=list, kw_only=True)
    entries_const: bool = field(default=False, kw_only=True)
    size: Optional[int] = field(default=None, kw_only=True)
    # Names (resolved to Instantiation) of direct externs and implementations.
    counters: Optional[Node] = field(default=None, kw_only=True)
    meters: Optional[Node] = field(default=None, kw_only=True)
    implementation: Optional[Node] = field(default=None, kw_only=True)
    other: dict[str, Any] = field(default_factory=dict, kw_only=True)

    def prop(self, name: str) -> Optional[TableProperty]:
        for p in self.properties:
            if p.name == name:
                return p
        return None


@dataclass(eq=False)
class Instantiation(Decl):
    """``T<args>(ctor args) name [= { abstract method impls }];``."""

    typeref: TypeRef
    args: list[Argument]
    initializer: list["Decl"] = field(default_factory=list)
    # the ParserDecl / ControlDecl / ExternDecl / PackageTypeDecl instantiated
    decl: Optional[Node] = field(default=None, kw_only=True)


@dataclass(eq=False)
class ValueSetDecl(Decl):
    """``value_set<T>(size) name;`` (parser value set)."""

    elem: TypeRef
    size: Expression


@dataclass(eq=False)
class SelectCase(Node):
    """``keyset : state;`` — ``keyset`` is an expression or a ``ListExpr`` of
    per-component keysets when the select has several expressions;
    ``state`` names the next state (resolved to ``ParserState`` or
    the strings ``"accept"``/``"reject"`` in ``next_state``)."""

    keyset: Expression
    state: str
    next_state: Any = field(default=None, kw_only=True)


@dataclass(eq=False)
class SelectExpr(Expression):
    """``select (e1, e2) { cases }``."""

    exprs: list[Expression]
    cases: list[SelectCase]


@dataclass(eq=False)
class Transition(Node):
    """``transition name;`` (``next_state`` resolved by the checker) or
    ``transition select(...) {...};`` (``select`` set)."""

    state: Optional[str] = None
    select: Optional[SelectExpr] = None
    next_state: Any = field(default=None, kw_only=True)


@dataclass(eq=False)
class ParserState(Decl):
    stmts: list[Statement]
    transition: Optional[Transition]


@dataclass(eq=False)
class ParserTypeDecl(Decl):
    """``parser P<T>(params);`` — a parser type prototype."""

    type_params: list[str]
    params: list[Param]


@dataclass(eq=False)
class ControlTypeDecl(Decl):
    """``control C<T>(params);`` — a control type prototype."""

    type_params: list[str]
    params: list[Param]


@dataclass(eq=False)
class PackageTypeDecl(Decl):
    """``package P<T>(params);``."""

    type_params: list[str]
    params: list[Param]


@dataclass(eq=False)
class ParserDecl(Decl):
    """``parser P(apply params)(ctor params) { locals; states }``."""

    type_params: list[str]
    params: list[Param]
    ctor_params: list[Param]
    locals: list[Decl]
    states: list[ParserState]

    def state(self, name: str) -> Optional[ParserState]:
        for s in self.states:
            if s.name == name:
                return s
        return None


@dataclass(eq=False)
class ControlDecl(Decl):
    """``control C(apply params)(ctor params) { locals; apply { body } }``."""

    type_params: list[str]
    params: list[Param]
    ctor_params: list[Param]
    locals: list[Decl]
    body: BlockStmt


# ==========================================================================
# Whole program


@dataclass(eq=False)
class PipelineBlock:
    """One argument of ``main``'s package: which parser/control is
    instantiated there, with its constructor arguments."""

    param: str  # package parameter name ("p", "vr", "ig", "eg", "ck", "dep")
    decl: Node  # ParserDecl or ControlDecl
    args: list[Argument]


@dataclass(eq=False)
class Program(Node):
    """A checked program.

    ``decls`` — top-level declarations in source order (including those of
    included files). ``main`` — the ``main`` package instantiation.
    ``package`` — the package type's name (``"V1Switch"``).
    ``blocks`` — ``main``'s arguments by package parameter name.
    For V1Switch, ``v1model`` maps the roles ``parser``, ``verify``,
    ``ingress``, ``egress``, ``compute``, ``deparser`` to their
    ``PipelineBlock``.
    ``errors``/``match_kinds`` — all members in declaration order.
    """

    decls: list[Decl]
    main: Optional[Instantiation] = None
    package: str = ""
    blocks: dict[str, PipelineBlock] = field(default_factory=dict)
    v1model: dict[str, PipelineBlock] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    match_kinds: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def find(self, name: str) -> Optional[Decl]:
        """The top-level declaration called ``name`` (the last one wins for
        overloaded externs: use ``find_all`` for those)."""
        found = None
        for d in self.decls:
            if d.name == name:
                found = d
        return found

    def find_all(self, name: str) -> list[Decl]:
        return [d for d in self.decls if d.name == name]


def clone(node: Any) -> Any:
    """A copy of a syntax tree that shares (does not copy) its types and the
    declarations references point at, so nominal type identity survives."""
    if isinstance(node, list):
        return [clone(x) for x in node]
    if isinstance(node, tuple):
        return tuple(clone(x) for x in node)
    if not isinstance(node, Node) or isinstance(node, Decl):
        return node
    new = object.__new__(type(node))
    for k, v in vars(node).items():
        if k in ("ref", "decl", "target", "params", "type", "resolved", "next_state"):
            setattr(new, k, v)
        else:
            setattr(new, k, clone(v))
    return new
