"""Every wire shape is written once (daemon/domain/shapes.py): the document's component
schemas are all generated from the shapes the renderers build, no two components
spell the same object, and the shapes' closed names agree with the domain's."""

from __future__ import annotations

import typing
from typing import Annotated, Any, Literal, NotRequired, TypedDict, get_args

import pytest
from msgspec import Meta

from daemon.api.openapi import document, generate
from daemon.api.table import table
from daemon.dialects import DIALECTS
from daemon.dialects.openai import render as openai_render
from daemon.dialects.openai.shapes import Endpoint, ErrorType, OpenAIStatus, Purpose
from daemon.dialects.relay import render as relay_render
from daemon.dialects.relay.shapes import RelayStatus
from daemon.domain import files, openai_input
from daemon.domain.errors import (
    Conflict,
    InsufficientStorage,
    InvalidRequest,
    NotFound,
    RelayError,
    TooMany,
    Unavailable,
)
from daemon.domain.jobs import STATUSES
from daemon.domain.shapes import Components, Named, open_shape


def test_every_component_is_generated_from_one_shape() -> None:
    """The document's schemas are exactly what the generator made of the route table's
    shapes: none is written by hand, and each name has one definition."""
    components = Components()
    for entry in table():
        op = entry.route.op
        for shape in (op.answer, op.body):
            if shape is not None:
                components.schema(getattr(shape, "shape", shape))
        for param in op.params:
            components.schema(param.type)
    generated = document()["components"]["schemas"]
    assert set(generated) >= set(components.schemas)
    for name, source in components.sources.items():
        defined = source if isinstance(source, type) else None
        assert defined is None or defined.__module__.startswith("daemon."), name
    assert generate(table()) == document()  # the generator is deterministic


def test_no_two_components_spell_the_same_object() -> None:
    """A shape written twice under two names would have the same properties."""
    seen: dict[tuple[tuple[str, str], ...], str] = {}
    for name, schema in document()["components"]["schemas"].items():
        properties = schema.get("properties")
        if not properties or len(properties) < 3:  # small pairs ({total, ...}) may agree
            continue
        key = tuple(sorted((p, repr(s)) for p, s in properties.items()))
        assert key not in seen, f"{name} and {seen[key]} are the same shape"
        seen[key] = name


def test_two_shapes_of_one_name_are_refused() -> None:
    class Twin(TypedDict):
        a: int

    first = Twin

    class Twin(TypedDict):  # type: ignore[no-redef]
        b: int

    components = Components()
    components.schema(first)
    with pytest.raises(TypeError, match="two shapes are named Twin"):
        components.schema(Twin)


class Inner(TypedDict):
    """An inner object."""

    n: Annotated[int, Meta(ge=1, le=9, description="A digit.")]


@open_shape
class Outer(TypedDict):
    kind: Literal["a", "b"]
    inner: Inner | None
    many: Annotated[list[str], Meta(min_length=1)]
    maybe: NotRequired[str]
    either: Annotated[Inner | dict[str, Any], Named("Either")]


def test_the_generator_reads_fields_constraints_and_openness() -> None:
    components = Components()
    assert components.schema(Outer) == {"$ref": "#/components/schemas/Outer"}
    outer, inner = components.schemas["Outer"], components.schemas["Inner"]
    assert "additionalProperties" not in outer  # open
    assert inner["additionalProperties"] is False and inner["description"] == "An inner object."
    assert outer["required"] == ["kind", "inner", "many", "either"]
    props = outer["properties"]
    assert props["kind"] == {"type": "string", "enum": ["a", "b"]}
    assert props["inner"] == {"anyOf": [{"$ref": "#/components/schemas/Inner"},
                                        {"type": "null"}]}
    assert props["many"] == {"type": "array", "items": {"type": "string"}, "minItems": 1}
    assert inner["properties"]["n"] == {"type": "integer", "minimum": 1, "maximum": 9,
                                        "description": "A digit."}
    assert components.schemas["Either"] == {"anyOf": [{"$ref": "#/components/schemas/Inner"},
                                                      {"type": "object"}]}


def test_closed_names_agree_with_the_domain() -> None:
    """The Literals a shape lists are the names the code gives."""
    names = {dialect: {d.status_name(s) for s in STATUSES}
             for dialect, d in DIALECTS.items()}
    assert names["relay"] == set(get_args(RelayStatus))
    assert names["openai"] - {"scheduled"} == set(get_args(OpenAIStatus))  # cron: Relay's
    assert set(get_args(Endpoint)) == set(openai_input.ENDPOINTS)
    assert set(get_args(Purpose)) == {files.BATCH, files.BATCH_OUTPUT}
    types = {cls.type for cls in (RelayError, InvalidRequest, NotFound, Conflict, TooMany,
                                  Unavailable, InsufficientStorage)}
    assert types <= set(get_args(ErrorType)) | {"service_unavailable"}


@pytest.mark.parametrize("render", [relay_render.relay_job, relay_render.webhook_payload,
                                    openai_render.batch])
def test_renderers_build_their_shapes(render: Any) -> None:
    """Each renderer says which shape it returns; the document has that shape."""
    returned = typing.get_type_hints(render)["return"]
    assert returned.__name__ in document()["components"]["schemas"]
