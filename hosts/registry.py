"""One way to build protocol agents: protocol name -> factories and parameters.

The UDP driver (``p4mcc host``), the simulator and the tests all build agents
through this table, so a protocol added here is at once runnable everywhere.

Each :class:`Protocol` names a parameter dataclass (every field has a default
and a docstring-worthy meaning in ``docs/protocols/``) and two factories.  A
factory takes one :class:`SessionConfig` and returns a
:class:`hosts.core.Endpoint`.  Entries are *lazy*: they name the module and the
attributes, so importing the registry never imports every core, and an entry
whose module is broken fails only when that protocol is used.

Example::

    from p4mcc.hosts import registry
    proto = registry.get("tfmcc")
    params = proto.parse_params({"packet_size": 1000})
    cfg = registry.SessionConfig(session_id=1, group="239.1.1.1", port=5000,
                                 sender="10.0.0.1", local="10.0.0.2", params=params)
    rcvr = proto.receiver(cfg)

Each entry also owns the protocol's facts other layers need: which switch
assistance its feedback calls for (``mode``, read by the controller's desired
state), the multicast groups a session uses (``groups``) and the switch's
filter round.  Agents get the session's resolved ``assisted`` flag in their
:class:`SessionConfig`, so a core never needs a parameter set by hand to
match the switch.

Adding a protocol: append one :class:`Protocol` line to :data:`_ENTRIES` (or
call :func:`register` from the protocol's own package); see
``docs/adding-a-protocol.md``.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from p4mcc.hosts.core import Endpoint
from p4mcc.hosts.input_files import MAX_NESTING, DuplicateKey, check_nesting, parse_json, read_input_text
from p4mcc.hosts.rules import DEFAULT, RuleBook, RuleError, hook
from p4mcc.hosts.wire import Stamp


class ParamError(ValueError):
    """A parameter name or value that does not fit the protocol's dataclass."""


@dataclass(frozen=True)
class SessionConfig:
    """Everything an agent needs to know about its session and itself.

    ``group`` is the session's (first) multicast group; protocols that use
    several groups (WEBRC's wave channels) derive theirs from it as their doc
    says.  ``sender`` is the sender's unicast address (where feedback goes);
    ``local`` is this host's own unicast address (its wire node id).
    ``seed`` makes every random choice of the agent reproducible.
    ``assisted`` says the switches on the session's path fold or filter its
    feedback (the session's ``assistance`` resolved by
    :meth:`Protocol.assisted`); a core whose logic depends on it reads it here.
    """

    session_id: int
    group: str
    port: int
    sender: str
    local: str
    params: Any = None
    seed: int = 0
    assisted: bool = False
    rules: tuple[str, ...] | None = None
    """The session's effective rule list (:meth:`Protocol.resolve_rules`);
    None: the protocol's ``default`` profile."""


Factory = Callable[[SessionConfig], Endpoint]


P = typing.TypeVar("P")


class SessionEndpoint(Endpoint, typing.Generic[P]):
    """A protocol core built from a :class:`SessionConfig`, with its parameters resolved once.

    Every registered sender and receiver starts the same way: keep the
    session's configuration as ``cfg`` and its parameters as ``p`` (the
    protocol's defaults when the session gives none).  A core names its
    parameter class and role where it is declared::

        class TfmccReceiver(SessionEndpoint[TfmccParams], role="tfmcc-receiver"):
    """

    params_type: typing.ClassVar[Callable[[], Any]]
    cfg: SessionConfig
    p: P

    def __init_subclass__(cls, role: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if role is not None:
            cls.role = role
        for base in getattr(cls, "__orig_bases__", ()):
            if typing.get_origin(base) is SessionEndpoint:
                cls.params_type = typing.get_args(base)[0]

    def __init__(self, config: SessionConfig) -> None:
        super().__init__()
        self.cfg = config
        self.p = config.params if config.params is not None else self.params_type()

    @hook
    def _echo_stamp(self) -> int:
        """The stamp byte a receiver's feedback carries back (docs/stamp.md): none in the
        papers; a ``stamp_echo`` rule (:class:`hosts.stampwindow.StampEcho`) carries the data's."""
        return Stamp.NOT_STAMPED


@dataclass(frozen=True)
class Protocol:
    """A registry entry: where the protocol's parameter class and cores live."""

    name: str
    module: str
    params_class: str
    sender_class: str
    receiver_class: str
    summary: str = ""
    mode: str = "off"
    """The switch assistance its feedback calls for: ``aggregate`` (the
    program folds summaries), ``filter`` (worst report per round) or ``off``
    (replication only).  ``docs/assistance.md`` says why for each protocol."""
    groups: str = ""
    """Name of a module function ``(group, params) -> groups`` for protocols
    that use several groups per session (first: the session's group); empty:
    the session's one group."""
    filter_window_us: int = 0
    """The switch's filter round (µs) when the protocol's reports carry none."""
    sender_link: str = ""
    """Name of a module function ``(params as written, sender link bit/s) ->
    (parameters to add, warning or None)`` for a protocol whose sender sends
    at a rate it does not adapt (WEBRC's session rate): it fits the defaults
    to the sender's own link.  Empty: the protocol adapts by itself."""
    rulebook: str = "RULES"
    """Name of the module's :class:`hosts.rules.RuleBook` (its named rules and
    profiles); a module without it has no named rules: every profile is its core."""
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def _attr(self, attr: str) -> Any:
        if attr not in self._cache:
            mod = importlib.import_module(self.module)
            self._cache[attr] = getattr(mod, attr)
        return self._cache[attr]

    @property
    def params_type(self) -> type:
        """The parameter dataclass (every field has a default)."""
        return self._attr(self.params_class)

    @property
    def sender_factory(self) -> Factory:
        return self._attr(self.sender_class)

    @property
    def receiver_factory(self) -> Factory:
        return self._attr(self.receiver_class)

    @property
    def rules(self) -> RuleBook:
        """The protocol's named rules and profiles."""
        if "_rulebook" not in self._cache:
            mod = importlib.import_module(self.module)
            self._cache["_rulebook"] = getattr(mod, self.rulebook, None) or RuleBook(self.name)
        return self._cache["_rulebook"]

    def resolve_rules(self, profile: str = DEFAULT, switches: dict[str, Any] | None = None) -> tuple[str, ...]:
        """The effective rule list of ``profile`` with rules switched on/off by name."""
        try:
            return self.rules.resolve(profile, switches)
        except RuleError as exc:
            raise ParamError(str(exc)) from None

    def _build(self, factory: Factory, config: SessionConfig) -> Endpoint:
        config = self._config(config)
        names = config.rules if config.rules is not None else self.resolve_rules()
        if isinstance(factory, type):
            factory = self.rules.compose(factory, names)
        return factory(config)

    def default_params(self) -> Any:
        return self.params_type()

    def parse_params(self, values: dict[str, Any] | None = None) -> Any:
        """Build the parameter dataclass from a mapping (unknown names rejected)."""
        return params_from_dict(self.params_type, values or {})

    def _config(self, config: SessionConfig) -> SessionConfig:
        if config.params is None:
            return dataclasses.replace(config, params=self.default_params())
        if not isinstance(config.params, self.params_type):
            if isinstance(config.params, dict):
                return dataclasses.replace(config, params=self.parse_params(config.params))
            raise ParamError(
                f"{self.name}: params must be {self.params_type.__name__}, "
                f"got {type(config.params).__name__}"
            )
        return config

    def assisted(self, assistance: bool) -> bool:
        """Whether a session with this ``assistance`` flag gets switch help."""
        return assistance and self.mode != "off"

    def session_groups(self, group: str, params: Any = None) -> tuple[str, ...]:
        """Every multicast group a session on ``group`` uses (its own first)."""
        if not self.groups:
            return (group,)
        if not isinstance(params, self.params_type):
            params = self.parse_params(params)
        return tuple(str(g) for g in self._attr(self.groups)(group, params))

    def fit_sender_link(self, given: dict[str, Any], link_bps: float) -> tuple[dict[str, Any], str | None]:
        """Parameters to add so the session's defaults fit a sender link of
        ``link_bps``, and a warning when the parameters ``given`` do not."""
        if not self.sender_link:
            return {}, None
        return self._attr(self.sender_link)(given, link_bps)

    def sender(self, config: SessionConfig) -> Endpoint:
        """Build the sender agent (params None or a dict are accepted too)."""
        return self._build(self.sender_factory, config)

    def receiver(self, config: SessionConfig) -> Endpoint:
        """Build a receiver agent (params None or a dict are accepted too)."""
        return self._build(self.receiver_factory, config)


_ENTRIES: list[Protocol] = [
    Protocol("tfmcc", "p4mcc.hosts.tfmcc", "TfmccParams", "TfmccSender", "TfmccReceiver",
             "TCP-friendly multicast congestion control (single rate, CLR feedback)",
             mode="filter"),
    Protocol("webrc", "p4mcc.hosts.webrc", "WebrcParams", "WebrcSender", "WebrcReceiver",
             "wave and equation based rate control (multi-rate, receiver driven)",
             groups="channel_groups", sender_link="fit_sender_link"),
    Protocol("rla", "p4mcc.hosts.rla", "RlaParams", "RlaSender", "RlaReceiver",
             "random listening algorithm (reliable, window based, SACK feedback)"),
    Protocol("mtcp", "p4mcc.hosts.mtcp", "MtcpParams", "MtcpSender", "MtcpReceiver",
             "multicast TCP over a tree of sender's agents (reliable, congestion summaries)",
             mode="aggregate"),
    Protocol("vlmcc", "p4mcc.hosts.vlmcc", "VlmccParams", "VlmccSender", "VlmccReceiver",
             "Vegas-like single-rate streaming toward a leader receiver",
             mode="filter", filter_window_us=100_000),
]
"""Why these modes: MTCP's ACKs and window updates fold (the program
aggregates them); TFMCC reports (which carry their round) and VLMCC
challenges (rounds timed by the switch) are worst-receiver feedback (the
program filters them); RLA and WEBRC get replication only."""

_PROTOCOLS: dict[str, Protocol] = {}


def register(proto: Protocol) -> None:
    """Add an entry at run time (tests, plug-ins); names are unique."""
    if proto.name in _PROTOCOLS:
        raise ValueError(f"protocol {proto.name!r} is already registered")
    _PROTOCOLS[proto.name] = proto


def unregister(name: str) -> None:
    """Remove a protocol added with :func:`register` (a test's toy protocol)."""
    _PROTOCOLS.pop(name, None)


for _p in _ENTRIES:
    register(_p)


def names() -> list[str]:
    """Registered protocol names, in registration order."""
    return list(_PROTOCOLS)


def get(name: str) -> Protocol:
    """The entry for ``name``; a clear error listing known names otherwise."""
    try:
        return _PROTOCOLS[name]
    except KeyError:
        raise ParamError(f"unknown protocol {name!r}; known: {', '.join(names())}") from None


# ---------------------------------------------------------------------------
# Parameter parsing shared by every protocol
# ---------------------------------------------------------------------------


def _coerce(cls_name: str, name: str, hint: Any, value: Any) -> Any:
    """Convert ``value`` (from JSON, TOML or a ``key=value`` flag) to ``hint``."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
            return None
        hint = args[0]
    try:
        if hint is bool:
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in ("1", "true", "yes", "on"):
                return True
            if isinstance(value, str) and value.lower() in ("0", "false", "no", "off"):
                return False
            if isinstance(value, int) and value in (0, 1):
                return bool(value)
            raise ValueError(value)
        if hint is int:
            if isinstance(value, bool):
                raise ValueError(value)
            if isinstance(value, float):
                if not value.is_integer():
                    raise ValueError(value)
                return int(value)
            return int(value, 0) if isinstance(value, str) else int(value)
        if hint is float:
            if isinstance(value, bool):
                raise ValueError(value)
            return float(value)
        if hint is str:
            return str(value)
    except (TypeError, ValueError):
        raise ParamError(
            f"{cls_name}.{name}: {value!r} is not a valid {getattr(hint, '__name__', hint)}"
        ) from None
    return value


def params_from_dict(cls: type, values: dict[str, Any]) -> Any:
    """Build dataclass ``cls`` from ``values``, converting types; unknown keys rejected.

    Keys may use ``-`` or ``_``.  The dataclass's own ``__post_init__`` checks
    ranges, and its ``ValueError`` is re-raised as :class:`ParamError`.
    """
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    kwargs: dict[str, Any] = {}
    for raw, value in values.items():
        key = raw.replace("-", "_")
        if key not in fields:
            raise ParamError(
                f"{cls.__name__}: unknown parameter {raw!r}; known: {', '.join(sorted(fields))}"
            )
        kwargs[key] = _coerce(cls.__name__, key, hints[key], value)
        _finite_unless_unlimited(cls.__name__, fields[key], kwargs[key])
        _rate_in_range(cls.__name__, key, kwargs[key])
    try:
        return cls(**kwargs)
    except ParamError:
        raise
    except (TypeError, ValueError) as exc:
        raise ParamError(f"{cls.__name__}: {exc}") from None


MAX_RATE_BPS = 100e9
"""Largest finite rate a parameter may give (``*_bps``): 100 Gb/s is above
any link p4mcc emulates, and a sender told to start at 1e18 b/s would
schedule packets closer than the clock resolves and run without end."""


def _rate_in_range(cls_name: str, name: str, value: Any) -> None:
    if name.endswith("_bps") and isinstance(value, (int, float)) and not isinstance(value, bool):
        if math.isfinite(value) and value > MAX_RATE_BPS:
            raise ParamError(f"{cls_name}.{name}: {value:g} b/s is above the {MAX_RATE_BPS:g} b/s a rate may be")


def _finite_unless_unlimited(cls_name: str, f: dataclasses.Field, value: Any) -> None:
    """NaN is never a parameter, and infinity only where the default is
    (a ceiling such as ``max_rate_bps`` = inf: no limit).  Few dataclasses
    check every range, and comparisons with NaN are all false, so a NaN
    gain or timer would pass their checks and stall the core."""
    if not isinstance(value, float) or math.isfinite(value):
        return
    unlimited = isinstance(f.default, float) and math.isinf(f.default)
    if math.isnan(value) or not unlimited:
        raise ParamError(f"{cls_name}.{f.name}: {value!r} is not a finite number")


def parse_pairs(pairs: list[str]) -> dict[str, str]:
    """``["a=1", "b=x"]`` -> ``{"a": "1", "b": "x"}`` (flags ``--param a=1``)."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ParamError(f"parameter {pair!r} is not KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def load_params_file(path: str | Path) -> dict[str, Any]:
    """Read parameters from a JSON or TOML file (a flat table of name -> value).

    Read as every input file is (``hosts.input_files``: a device or a huge
    file is refused unread).  A name given twice is an error, as TOML
    makes it: JSON parsers keep the last value silently.
    """
    p = Path(path)
    try:
        text = read_input_text(p)
    except OSError as exc:
        raise ParamError(f"{p}: cannot read: {exc.strerror or type(exc).__name__}") from None
    except ValueError as exc:
        raise ParamError(f"{p}: {exc}") from None
    if p.suffix == ".toml":
        import tomllib

        try:
            data: Any = check_nesting(tomllib.loads(text))
        except tomllib.TOMLDecodeError as exc:
            raise ParamError(f"{p}: not valid TOML: {exc}") from None
        except (ValueError, RecursionError):
            raise ParamError(f"{p}: nested deeper than {MAX_NESTING} levels") from None
    else:
        try:
            data = parse_json(text)
        except json.JSONDecodeError as exc:
            raise ParamError(f"{p}: not valid JSON: {exc}") from None
        except DuplicateKey as exc:
            raise ParamError(f"{p}: parameter {exc.key!r} given twice") from None
        except ValueError as exc:  # nested too deeply
            raise ParamError(f"{p}: {exc}") from None
    if not isinstance(data, dict):
        raise ParamError(f"{p}: expected a table of parameter names to values")
    return data


def describe_params(cls: type) -> list[tuple[str, str, Any]]:
    """(name, type name, default) for every parameter, for ``--help`` listings."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        default = f.default if f.default is not dataclasses.MISSING else None
        out.append((f.name, getattr(hints[f.name], "__name__", str(hints[f.name])), default))
    return out
