"""OpenAI's published schemas (vendored in `schemas.json`, see README.md), as a
validator of what Relay's OpenAI dialect answers: `conform(value, "Batch")`.

Two adjustments, both applied here and nowhere else:
- `nullable: true` (OpenAPI 3.0's word, still in parts of the 3.1 description) is
  read as it is meant: the value may also be null. A JSON Schema validator alone
  ignores it.
- `BEHAVIOUR`: where the description and OpenAI's real answers differ, Relay follows
  the answers; each case is listed here, with what OpenAI does, and in the README.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

HERE = Path(__file__).parent
BASE = "urn:openai-openapi"

# (schema, property): OpenAI answers null where the description says a value.
BEHAVIOUR: dict[tuple[str, str], str] = {
    ("ListBatchesResponse", "first_id"): "null on an empty page",
    ("ListBatchesResponse", "last_id"): "null on an empty page",
    ("ListFilesResponse", "first_id"): "null on an empty page",
    ("ListFilesResponse", "last_id"): "null on an empty page",
    ("Batch", "errors"): "null unless validation failed",
    ("Batch", "output_file_id"): "null until written, and when no record succeeded",
    ("Batch", "error_file_id"): "null until written, and when no record failed",
    ("Batch", "in_progress_at"): "null until the batch starts",
    ("Batch", "finalizing_at"): "null until it happens",
    ("Batch", "completed_at"): "null until it happens",
    ("Batch", "failed_at"): "null until it happens",
    ("Batch", "expired_at"): "null until it happens",
    ("Batch", "cancelling_at"): "null until it happens",
    ("Batch", "cancelled_at"): "null until it happens",
    ("Batch", "model"): "null until validation settles it (the SDK types it optional)",
    ("Batch", "usage"): "null before any record has run (and on batches made before "
                        "September 2025)",
    ("OpenAIFile", "expires_at"): "null for a file kept until deleted",
    ("ModelResponseProperties", "user"): "a Response says \"user\": null when the request "
                                         "named none",
    ("OpenAIFile", "status_details"): "null (deprecated; set only for a failed fine-tuning "
                                      "file)",
}


def _nullable(node: Any) -> Any:
    """`{..., nullable: true}` as `anyOf: [{...}, {type: null}]`, everywhere in `node`."""
    if isinstance(node, list):
        return [_nullable(v) for v in node]
    if not isinstance(node, dict):
        return node
    inner = {k: _nullable(v) for k, v in node.items() if k != "nullable"}
    return {"anyOf": [inner, {"type": "null"}]} if node.get("nullable") is True else inner


def _behaving(schemas: dict[str, Any]) -> dict[str, Any]:
    adjusted = copy.deepcopy(schemas)
    for (name, prop), _ in BEHAVIOUR.items():
        props = adjusted[name]["properties"]
        props[prop] = {"anyOf": [props[prop], {"type": "null"}]}
    return adjusted


@cache
def vendored() -> dict[str, Any]:
    """`schemas.json` as it was vendored: source, commit, date, schemas."""
    document: dict[str, Any] = json.loads((HERE / "schemas.json").read_text())
    return document


@cache
def _registry() -> Registry[Any]:
    root = {"components": {"schemas": _behaving(_nullable(vendored()["schemas"]))}}
    resource = Resource.from_contents(root, default_specification=DRAFT202012)
    return Registry().with_resource(BASE, resource)


def problems(value: Any, name: str) -> list[str]:
    """Each way `value` breaks OpenAI's schema `name`, as `path: message`."""
    validator = Draft202012Validator({"$ref": f"{BASE}#/components/schemas/{name}"},
                                     registry=_registry())
    return [f"{'/'.join(map(str, e.absolute_path)) or '.'}: {e.message[:300]}"
            for e in sorted(validator.iter_errors(value), key=lambda e: list(e.path))]


def conform(value: Any, name: str) -> None:
    """Assert that `value` is a valid `name` of OpenAI's description."""
    found = problems(value, name)
    assert not found, f"not a valid {name}:\n" + "\n".join(found)
