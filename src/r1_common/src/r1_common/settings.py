"""Node settings declared once: name, type, default, range and meaning in one dataclass.

A node declares its private parameters as a frozen dataclass deriving from `Settings`, each field
made with `setting()`::

    @dataclass(frozen=True)
    class ChassisSettings(Settings):
        command_timeout: float = setting(0.2, "s; a target older than this stops the base", low=0.01)
        odom_frame: str = setting("odom", "frame of /odom")

and reads them with `ChassisSettings.from_params(rospy.get_param("~"), where="chassis_control_node")`.
`from_params` converts each value to its declared type, checks its range or choices, and rejects
unknown keys; every problem raises `ConfigError` naming the key. `markdown_table()` renders the
declaration for `docs/`, where a test keeps the documented table equal to it.

Types: bool, int, float (finite), str, Optional[T], List[T], Tuple[T, ...], Tuple[T1, T2, ...],
Dict[str, T], Any (taken as is) and nested Settings classes (a sub-namespace). Annotations must use
the `typing` generics (`List[float]`, not `list[float]`): they are evaluated at run time, on Python 3.8
too. ROS-free.
"""
from __future__ import annotations

import dataclasses
import math
import typing
from typing import Any, Dict, Iterable, Mapping, Optional, Sequence, Tuple, Type, TypeVar

S = TypeVar("S", bound="Settings")


class ConfigError(ValueError):
    """A node's configuration that cannot be used; `key` names the parameter ("" for the whole set)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}" if key else message)
        self.key = key


def setting(default: Any, doc: str, *, low: Optional[float] = None, high: Optional[float] = None,
            choices: Optional[Sequence[Any]] = None) -> Any:
    """A declared setting: its default, its meaning (units first, e.g. "s; ..."), and optionally an
    inclusive numeric range (`low`, `high`, applied to every element of a list) or the allowed values."""
    metadata = {"doc": doc, "low": low, "high": high, "choices": tuple(choices) if choices is not None else None}
    if isinstance(default, (list, dict)) or dataclasses.is_dataclass(default):
        value = default
        factory = (lambda: dataclasses.replace(value)) if dataclasses.is_dataclass(value) else \
            (lambda: type(value)(value))
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


@dataclasses.dataclass(frozen=True)
class Settings:
    """Base of a node's settings dataclass (see the module's docstring)."""

    @classmethod
    def from_params(cls: Type[S], params: Optional[Mapping[str, Any]], where: str = "",
                    ignore: Iterable[str] = (), base: Optional[S] = None) -> S:
        """The settings from a parameter namespace (a dict; None or missing keys take the defaults, or
        `base`'s values when given: a nested section is read over its field's default instance).

        `ignore` names keys that belong to someone else (e.g. parameters a launch file puts in the
        node's namespace for another tool). Raises ConfigError naming the key (prefixed with `where`)."""
        prefix = f"{where}/" if where else ""
        if params is None:
            params = {}
        if not isinstance(params, Mapping):
            raise ConfigError(where, f"the parameters must be a namespace (a dict), not {params!r}")
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(str(k) for k in params if k not in fields and k not in set(ignore))
        if unknown:
            raise ConfigError(prefix + unknown[0], f"unknown parameter (known: {', '.join(sorted(fields))})")
        hints = typing.get_type_hints(cls)
        values = {}
        for name, f in fields.items():
            if name not in params:
                continue
            key = prefix + name
            tp = hints[name]
            if isinstance(tp, type) and issubclass(tp, Settings):      # a section: over its default
                current = getattr(base, name) if base is not None else _default_of(f)
                value = tp.from_params(params[name], where=key, base=current)
            else:
                value = _convert(params[name], tp, key)
            _check_range(value, f.metadata, key)
            values[name] = value
        try:
            return dataclasses.replace(base, **values) if base is not None else cls(**values)
        except ConfigError:
            raise
        except (TypeError, ValueError) as e:           # a __post_init__ check across fields
            raise ConfigError(where, str(e)) from None

    def to_params(self) -> Dict[str, Any]:
        """The settings as a parameter namespace (the inverse of from_params)."""
        return {f.name: _to_param(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def markdown_table(cls) -> str:
        """The declaration as a Markdown table: parameter, type, default, range, meaning."""
        hints = typing.get_type_hints(cls)
        rows = ["| parameter | type | default | range | meaning |", "|---|---|---|---|---|"]
        for f in dataclasses.fields(cls):
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
            m = f.metadata
            if m.get("choices") is not None:
                span = " / ".join(f"`{c}`" for c in m["choices"])
            elif m.get("low") is not None or m.get("high") is not None:
                span = f"{_fmt(m.get('low'), '-inf')} .. {_fmt(m.get('high'), 'inf')}"
            else:
                span = ""
            shown = "(section)" if isinstance(default, Settings) else f"`{_fmt(default, 'null')}`"
            rows.append(f"| `{f.name}` | {_type_name(hints[f.name])} | {shown} | {span} | {m.get('doc', '')} |")
        return "\n".join(rows)


def _default_of(f: "dataclasses.Field[Any]") -> Any:
    return f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]


def _to_param(v: Any) -> Any:
    """A setting's value as a parameter value: sections as maps, tuples as lists, inside maps and lists too."""
    if isinstance(v, Settings):
        return v.to_params()
    if isinstance(v, (list, tuple)):
        return [_to_param(x) for x in v]
    if isinstance(v, dict):
        return {k: _to_param(x) for k, x in v.items()}
    return v


def _fmt(v: Any, none: str) -> str:
    if v is None:
        return none
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt(x, "null") for x in v) + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_fmt(x, 'null')}" for k, x in v.items()) + "}"
    return repr(v) if isinstance(v, str) and v == "" else str(v)


def _type_name(tp: Any) -> str:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union:
        inner = [a for a in args if a is not type(None)]
        return f"{_type_name(inner[0])} or null"
    if origin in (list, tuple):
        if origin is tuple and (len(args) != 2 or args[1] is not Ellipsis):
            return f"{len(args)} × {_type_name(args[0])}" if len(set(args)) == 1 else \
                "(" + ", ".join(_type_name(a) for a in args) + ")"
        return f"list of {_type_name(args[0])}"
    if origin is dict:
        return f"map to {_type_name(args[1])}"
    if isinstance(tp, type) and issubclass(tp, Settings):
        return "section"
    return getattr(tp, "__name__", str(tp))


def _convert(value: Any, tp: Any, key: str) -> Any:
    """`value` as type `tp`, or ConfigError naming `key`."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return value
    if origin is typing.Union:                              # Optional[T]
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _convert(value, inner[0], key)
    if isinstance(tp, type) and issubclass(tp, Settings):
        return tp.from_params(value, where=key)
    if origin in (list, tuple):
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
            raise ConfigError(key, f"must be a list, not {value!r}")
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            if len(value) != len(args):
                raise ConfigError(key, f"must have {len(args)} entries, has {len(value)}: {list(value)!r}")
            return tuple(_convert(v, a, f"{key}[{i}]") for i, (v, a) in enumerate(zip(value, args)))
        items = [_convert(v, args[0], f"{key}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(key, f"must be a map, not {value!r}")
        return {str(k): _convert(v, args[1], f"{key}/{k}") for k, v in value.items()}
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(key, f"must be true or false, not {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(key, f"must be an integer, not {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(key, f"must be a number, not {value!r}")
        if not math.isfinite(value):
            raise ConfigError(key, f"must be finite, not {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(key, f"must be a string, not {value!r}")
        return value
    raise TypeError(f"{key}: settings of type {tp!r} are not supported")


def _check_range(value: Any, meta: Mapping[str, Any], key: str) -> None:
    choices = meta.get("choices")
    if choices is not None and value not in choices:
        raise ConfigError(key, f"must be one of {', '.join(map(repr, choices))}, not {value!r}")
    low, high = meta.get("low"), meta.get("high")
    if low is None and high is None:
        return
    for i, v in _numbers(value):
        where = key if i is None else f"{key}[{i}]"
        if low is not None and v < low:
            raise ConfigError(where, f"{v!r} is below its range {low} .. {_fmt(high, 'inf')}")
        if high is not None and v > high:
            raise ConfigError(where, f"{v!r} is above its range {_fmt(low, '-inf')} .. {high}")


def _numbers(value: Any) -> Iterable[Tuple[Optional[int], float]]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        yield None, value
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                yield i, v
