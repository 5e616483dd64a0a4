"""Wire shapes: every JSON object Relay sends or takes, written once as a `TypedDict`,
and the one generator that turns them into the OpenAPI document's schemas.

A shape is a `TypedDict` whose docstring is its description. Its fields carry their
constraints in `msgspec.Meta` (description, ge/le, pattern, min/max length, and
`extra_json_schema` for the rest, such as `format`), so the renderers that build
the shapes and the document that describes them share one definition. Response
shapes are closed (`additionalProperties: false`): a field a renderer adds must be
added to its shape. A shape that passes other keys through (a chat message, a
record's body) is marked with `@open_shape`.

Why `TypedDict` and not `msgspec.Struct`: a renderer builds the same dict either way,
mypy checks its keys and types, and building a batch object and encoding it with
msgspec took 1.32 µs as a dict against 1.51 µs as a Struct (json.dumps of the dict:
5.92 µs). msgspec's own schema generator refuses unions of two objects without a
tag field (a job is a Relay job or an OpenAI batch, both `object: "batch"`), so the
generator is this module's.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, Required, TypeVar, Union, get_args, get_origin

import msgspec

Schema = dict[str, Any]
T = TypeVar("T")

_OPEN: set[type] = set()
_EXTRA: dict[type, Schema] = {}
REF = "#/components/schemas/{name}"


def open_shape(cls: type[T]) -> type[T]:
    """Mark a shape whose objects may carry keys beyond its fields."""
    _OPEN.add(cls)
    return cls


def schema_extra(extra: Schema) -> Callable[[type[T]], type[T]]:
    """Add to a shape's schema what its fields cannot say (`oneOf` of required keys)."""
    def mark(cls: type[T]) -> type[T]:
        _EXTRA[cls] = extra
        return cls
    return mark


@dataclass(frozen=True)
class Named:
    """`Annotated[A | B, Named("X")]`: a union that is a component of its own."""

    name: str


def is_shape(tp: Any) -> bool:
    return isinstance(tp, type) and typing.is_typeddict(tp)


class Components:
    """The schemas of a set of shapes, each shape one named component. Two different
    classes of one name are refused: a component comes from one definition."""

    def __init__(self) -> None:
        self.schemas: dict[str, Schema] = {}
        self.sources: dict[str, Any] = {}

    def schema(self, tp: Any) -> Schema:
        """The schema of a type, registering every shape it reaches."""
        return _schema(tp, self)

    def ref(self, cls: type) -> Schema:
        name = cls.__name__
        known = self.sources.get(name)
        if known is cls:
            return {"$ref": REF.format(name=name)}
        if known is not None:
            raise TypeError(f"two shapes are named {name}: {_where(known)} and {_where(cls)}")
        self.sources[name] = cls
        self.schemas[name] = {}  # reserved first: a shape may reach itself
        self.schemas[name] = _object(cls, self)
        return {"$ref": REF.format(name=name)}

    def named(self, name: str, tp: Any, metas: Iterable[msgspec.Meta] = ()) -> Schema:
        """A named union's component: registered once, under one definition."""
        known = self.sources.get(name)
        if known is not None and known != tp:
            raise TypeError(f"two shapes are named {name}")
        if known is None:
            self.sources[name] = tp
            schema = _schema(tp, self)
            for meta in metas:
                schema = _constrained(schema, meta)
            self.schemas[name] = schema
        return {"$ref": REF.format(name=name)}

    def add(self, shapes: Iterable[type]) -> None:
        for cls in shapes:
            self.ref(cls)


def _where(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _object(cls: type, components: Components) -> Schema:
    hints = typing.get_type_hints(cls, include_extras=True)
    properties = {name: _schema(_bare(tp), components) for name, tp in hints.items()}
    total = getattr(cls, "__total__", True)
    schema: Schema = {"type": "object", "properties": properties,
                      "required": [n for n, tp in hints.items() if _required(tp, total)]}
    if cls not in _OPEN:
        schema["additionalProperties"] = False
    if cls.__doc__ and cls.__doc__ is not dict.__doc__:
        schema["description"] = " ".join(cls.__doc__.split())
    return schema | _EXTRA.get(cls, {})


def _required(tp: Any, total: bool) -> bool:
    """Whether a field must be there: `Required`/`NotRequired` say, else the class's
    totality. (Read from the hints: with postponed annotations, Python 3.11's
    `__required_keys__` misses `NotRequired`.)"""
    origin = get_origin(tp)
    if origin is NotRequired:
        return False
    return True if origin is Required else total


def _bare(tp: Any) -> Any:
    """A field's type without `Required`/`NotRequired` (the TypedDict keeps them)."""
    while get_origin(tp) in (Required, NotRequired):
        tp = get_args(tp)[0]
    return tp


def _schema(tp: Any, components: Components) -> Schema:
    origin = get_origin(tp)
    if origin is typing.Annotated:
        base, *extras = get_args(tp)
        names = [meta.name for meta in extras if isinstance(meta, Named)]
        metas = [meta for meta in extras if isinstance(meta, msgspec.Meta)]
        if names:
            return components.named(names[0], base, metas)
        schema = _schema(base, components)
        for meta in metas:
            schema = _constrained(schema, meta)
        return schema
    if tp is Any:
        return {}
    if tp is type(None) or tp is None:
        return {"type": "null"}
    if is_shape(tp):
        return components.ref(tp)
    if origin is Literal:
        return {"type": _json_type(type(get_args(tp)[0])), "enum": list(get_args(tp))}
    if origin in (Union, types.UnionType):
        return _union([_schema(a, components) for a in get_args(tp)])
    if origin is list or origin is tuple:
        return {"type": "array", "items": _schema(get_args(tp)[0], components)}
    if origin is dict:
        value = get_args(tp)[1]
        return {"type": "object"} if value is Any else {
            "type": "object", "additionalProperties": _schema(value, components)}
    if tp is dict:
        return {"type": "object"}
    if tp in (str, int, float, bool):
        return {"type": _json_type(tp)}
    raise TypeError(f"no schema for {tp!r}")


def _json_type(tp: type) -> str:
    return {str: "string", int: "integer", float: "number", bool: "boolean"}[tp]


def _union(options: list[Schema]) -> Schema:
    """`T | None` as `type: [t, "null"]` where T is one plain type; else anyOf."""
    null = {"type": "null"}
    if len(options) == 2 and null in options:
        other = options[0] if options[1] == null else options[1]
        kind = other.get("type")
        if isinstance(kind, str) and "enum" not in other:
            return {**other, "type": [kind, "null"]}
    return {"anyOf": options}


_KEYWORDS = {"ge": "minimum", "le": "maximum", "gt": "exclusiveMinimum",
             "lt": "exclusiveMaximum", "pattern": "pattern", "title": "title",
             "description": "description", "examples": "examples"}


def _constrained(schema: Schema, meta: msgspec.Meta) -> Schema:
    schema = dict(schema)
    for attribute, keyword in _KEYWORDS.items():
        value = getattr(meta, attribute)
        if value is not None:
            schema[keyword] = value
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else [k for k in kind or () if k != "null"]
    sized = {"array": ("minItems", "maxItems"), "object": ("minProperties", "maxProperties")}
    low, high = sized.get(kinds[0] if kinds else "", ("minLength", "maxLength"))
    if meta.min_length is not None:
        schema[low] = meta.min_length
    if meta.max_length is not None:
        schema[high] = meta.max_length
    return schema | dict(meta.extra_json_schema or {})


def described(text: str) -> msgspec.Meta:
    return msgspec.Meta(description=text)


DateTime = msgspec.Meta(extra_json_schema={"format": "date-time"})
