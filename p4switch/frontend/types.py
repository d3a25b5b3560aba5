"""P4_16 types as the type checker resolves them.

Every expression of the typed IR carries one of these in its ``type``
attribute.  Value-like types (``BitsType``, ``VarbitType``, ``StackType``,
the singletons) compare by value; named types (headers, structs, enums,
externs, blocks) compare by identity, because two declarations with the same
fields are still different types in P4_16 (nominal typing).
Typedefs never appear here: a ``typedef`` is an alias and resolves to the
type it names.  A ``type`` declaration is a distinct type (``NewType``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

#: Declarations of the syntax tree (``p4switch.frontend.ast`` nodes) that a
#: type points back to.  The syntax tree imports this module for the types its
#: nodes carry, so this one names them without importing it (no import cycle).
DeclNode = Any
ExternDeclNode = Any
TableDeclNode = Any
AnnotationNode = Any


class P4Type:
    """Base of all types."""

    def __str__(self) -> str:  # pragma: no cover - overridden
        return type(self).__name__


# --------------------------------------------------------------------------
# Base types


@dataclass(frozen=True, slots=True)
class BitsType(P4Type):
    """``bit<W>`` (unsigned) or ``int<W>`` (two's complement signed)."""

    width: int
    signed: bool = False

    def __str__(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"


@dataclass(frozen=True, slots=True)
class VarbitType(P4Type):
    """``varbit<W>``: up to ``max_width`` bits, actual width known at run time."""

    max_width: int

    def __str__(self) -> str:
        return f"varbit<{self.max_width}>"


@dataclass(frozen=True, slots=True)
class IntType(P4Type):
    """Infinite-precision integer (``int``): only for compile-time values."""

    def __str__(self) -> str:
        return "int"


@dataclass(frozen=True, slots=True)
class BoolType(P4Type):
    def __str__(self) -> str:
        return "bool"


@dataclass(frozen=True, slots=True)
class StringType(P4Type):
    def __str__(self) -> str:
        return "string"


@dataclass(frozen=True, slots=True)
class VoidType(P4Type):
    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True, slots=True)
class ErrorType(P4Type):
    """The single ``error`` type; its members are collected from all declarations."""

    def __str__(self) -> str:
        return "error"


@dataclass(frozen=True, slots=True)
class MatchKindType(P4Type):
    def __str__(self) -> str:
        return "match_kind"


@dataclass(frozen=True, slots=True)
class DontCareType(P4Type):
    """Type of ``_`` / ``default`` in keysets and of ``_`` out-arguments."""

    def __str__(self) -> str:
        return "_"


@dataclass(frozen=True, slots=True)
class StackType(P4Type):
    """``T[N]``: a header stack (elem is a header or header union type)."""

    elem: P4Type
    size: int

    def __str__(self) -> str:
        return f"{self.elem}[{self.size}]"


@dataclass(frozen=True, slots=True)
class TupleType(P4Type):
    """``tuple<...>`` and the type of a list expression ``{a, b}``."""

    elems: tuple[P4Type, ...]

    def __str__(self) -> str:
        return "tuple<" + ", ".join(map(str, self.elems)) + ">"


@dataclass(frozen=True, slots=True)
class SetType(P4Type):
    """``set<T>``: keyset expressions (masks, ranges) and value sets."""

    elem: P4Type

    def __str__(self) -> str:
        return f"set<{self.elem}>"


# --------------------------------------------------------------------------
# Named (nominal) types


@dataclass(eq=False)
class FieldInfo:
    """One field of a header, header union or struct."""

    name: str
    type: P4Type
    annotations: list[AnnotationNode] = field(default_factory=list)


@dataclass(eq=False)
class StructLikeType(P4Type):
    """Common shape of headers, header unions and structs."""

    name: str
    fields: list[FieldInfo]
    decl: Optional[DeclNode] = None

    def field(self, name: str) -> Optional[FieldInfo]:
        for f in self.fields:
            if f.name == name:
                return f
        return None

    def __str__(self) -> str:
        return self.name

    __hash__ = object.__hash__


@dataclass(eq=False)
class HeaderType(StructLikeType):
    """A header: fields of bit/int/varbit/bool/serializable-enum type plus a validity bit."""

    __hash__ = object.__hash__

    def width_bits(self) -> int:
        """Fixed width in bits, counting each varbit field at width 0."""
        return sum(_fixed_width(f.type) for f in self.fields)


@dataclass(eq=False)
class HeaderUnionType(StructLikeType):
    __hash__ = object.__hash__


@dataclass(eq=False)
class StructType(StructLikeType):
    __hash__ = object.__hash__


@dataclass(eq=False)
class EnumType(P4Type):
    """``enum`` (``underlying`` is None) or serializable ``enum bit<W>``."""

    name: str
    members: list[str]
    underlying: Optional[BitsType] = None
    values: dict[str, int] = field(default_factory=dict)  # serializable only
    decl: Optional[DeclNode] = None

    def __str__(self) -> str:
        return self.name

    __hash__ = object.__hash__


@dataclass(eq=False)
class NewType(P4Type):
    """``type T N;``: a distinct type represented as ``base``."""

    name: str
    base: P4Type
    decl: Optional[DeclNode] = None

    def __str__(self) -> str:
        return self.name

    __hash__ = object.__hash__


@dataclass(eq=False)
class TypeVar(P4Type):
    """A type parameter of a generic declaration (``T`` in ``extern register<T>``)."""

    name: str

    def __str__(self) -> str:
        return self.name

    __hash__ = object.__hash__


@dataclass(eq=False)
class ExternType(P4Type):
    """An extern object type, possibly specialised (``register<bit<32>>``)."""

    decl: ExternDeclNode
    type_args: tuple[P4Type, ...] = ()

    @property
    def name(self) -> str:
        return self.decl.name

    def __str__(self) -> str:
        if self.type_args:
            return f"{self.name}<" + ", ".join(map(str, self.type_args)) + ">"
        return self.name

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ExternType)
            and other.decl is self.decl
            and other.type_args == self.type_args
        )

    def __hash__(self) -> int:
        return hash((id(self.decl), self.type_args))


@dataclass(eq=False)
class BlockType(P4Type):
    """Type of a parser, control or package (a declaration or its type prototype)."""

    decl: DeclNode
    type_args: tuple[P4Type, ...] = ()

    @property
    def name(self) -> str:
        return self.decl.name  # type: ignore[attr-defined]

    def __str__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, BlockType)
            and other.decl is self.decl
            and other.type_args == self.type_args
        )

    def __hash__(self) -> int:
        return hash((id(self.decl), self.type_args))


@dataclass(eq=False)
class TableType(P4Type):
    """Type of a table name; ``apply()`` on it yields ``ApplyResultType``."""

    decl: TableDeclNode

    def __str__(self) -> str:
        return f"table {self.decl.name}"


@dataclass(eq=False)
class ApplyResultType(P4Type):
    """Result of ``t.apply()``: has ``hit``, ``miss`` and ``action_run``."""

    table: TableDeclNode

    def __str__(self) -> str:
        return f"{self.table.name}.apply() result"


@dataclass(eq=False)
class ActionEnumType(P4Type):
    """Type of ``t.apply().action_run``: one member per action of the table."""

    table: TableDeclNode

    def __str__(self) -> str:
        return f"action_list({self.table.name})"


@dataclass(eq=False)
class CallableType(P4Type):
    """Type of a name that can only be called: action, function, method."""

    decl: DeclNode

    def __str__(self) -> str:
        return f"callable {getattr(self.decl, 'name', '?')}"


@dataclass(eq=False)
class TypeNameType(P4Type):
    """The 'type' of an expression that names a type (``E`` in ``E.member``)."""

    named: P4Type

    def __str__(self) -> str:
        return f"type {self.named}"


BOOL = BoolType()
INT = IntType()
STRING = StringType()
VOID = VoidType()
ERROR = ErrorType()
MATCH_KIND = MatchKindType()
DONT_CARE = DontCareType()


def _fixed_width(t: P4Type) -> int:
    t = strip_newtype(t)
    if isinstance(t, BitsType):
        return t.width
    if isinstance(t, BoolType):
        return 1
    if isinstance(t, EnumType) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, VarbitType):
        return 0
    if isinstance(t, StructLikeType):
        return sum(_fixed_width(f.type) for f in t.fields)
    if isinstance(t, StackType):
        return t.size * _fixed_width(t.elem)
    return 0


def width_of(t: P4Type) -> int:
    """Width in bits of a fixed-width serializable type (varbit counts as 0)."""
    return _fixed_width(t)


def strip_newtype(t: P4Type) -> P4Type:
    """The representation type of a ``type`` declaration chain."""
    while isinstance(t, NewType):
        t = t.base
    return t


def is_header_like(t: P4Type) -> bool:
    return isinstance(t, (HeaderType, HeaderUnionType))
