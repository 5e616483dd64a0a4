"""Checking real answers against the served OpenAPI document (daemon/api/openapi.py).

`Contract.call` makes a request through the API test client, finds the document's
operation for its method and path, and checks the answer: the status is documented
for that operation, the content type is one it lists, required headers are there,
and a JSON body validates against the response schema (JSON Schema 2020-12, the
dialect of OpenAPI 3.1). It records which (operation, status) pairs it has checked.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator
from multidict import CIMultiDictProxy
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from daemon.api.openapi import document
from tests.api.conftest import Relay

DOC = document()
BASE = "urn:relay:openapi"
REGISTRY: Registry = Registry().with_resource(
    BASE, Resource.from_contents(DOC, default_specification=DRAFT202012))
METHODS = ("get", "post", "put", "patch", "delete")


def pointer(*parts: str) -> str:
    """A JSON pointer (RFC 6901) of `parts`."""
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def problems(instance: Any, at: str) -> list[str]:
    """Where `instance` breaks the schema at pointer `at` in the document."""
    validator = Draft202012Validator({"$ref": BASE + "#" + at}, registry=REGISTRY,
                                     format_checker=Draft202012Validator.FORMAT_CHECKER)
    return [f"{e.json_path}: {e.message[:300]}" for e in validator.iter_errors(instance)]


def validate(instance: Any, at: str) -> None:
    found = problems(instance, at)
    assert not found, f"the answer does not match {at}:\n" + "\n".join(found)


@dataclass(frozen=True)
class Operation:
    op_id: str
    method: str
    template: str
    pattern: re.Pattern[str]

    @property
    def at(self) -> tuple[str, str]:
        return "paths", self.template


def operations() -> list[Operation]:
    found = []
    for template, item in DOC["paths"].items():
        pattern = re.compile(re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(template)))
        found += [Operation(op["operationId"], method, template, pattern)
                  for method, op in item.items() if method in METHODS]
    return found


OPERATIONS = operations()


def operation_for(method: str, path: str) -> Operation:
    matched = [op for op in OPERATIONS
               if op.method == method.lower() and op.pattern.fullmatch(path)]
    assert len(matched) == 1, f"{method} {path}: {len(matched)} operations match"
    return matched[0]


def response_for(op: Operation, status: int) -> tuple[dict[str, Any], str]:
    """The documented response for `status` and its pointer (response refs followed)."""
    responses = DOC["paths"][op.template][op.method]["responses"]
    assert str(status) in responses, (f"{op.op_id} answered {status}, which the document "
                                      f"does not list ({', '.join(responses)})")
    response = responses[str(status)]
    at = pointer("paths", op.template, op.method, "responses", str(status))
    if "$ref" in response:
        at = response["$ref"].removeprefix("#")
        name = at.rsplit("/", 1)[-1]
        response = DOC["components"]["responses"][name]
    return response, at


@dataclass
class Contract:
    relay: Relay
    checked: set[tuple[str, int]] = field(default_factory=set)

    async def call(self, method: str, path: str, *, key: str | None = None,
                   auth: bool = True, **kwargs: Any) -> tuple[int, Any]:
        """The request, checked against the document; (status, JSON body or bytes)."""
        headers = {**(self.relay.headers(key) if auth else {}), **kwargs.pop("headers", {})}
        async with self.relay.client.request(method, path, headers=headers,
                                             **kwargs) as resp:
            raw = await resp.read()
            body = json.loads(raw) if resp.content_type == "application/json" else raw
            self.check(method, path, resp.status, resp.content_type, body, resp.headers)
            return resp.status, body

    async def ok(self, method: str, path: str, **kwargs: Any) -> Any:
        status, body = await self.call(method, path, **kwargs)
        assert status == 200, body
        return body

    def check(self, method: str, path: str, status: int, content_type: str, body: Any,
              headers: CIMultiDictProxy[str]) -> None:
        op = operation_for(method, urlsplit(path).path)
        response, at = response_for(op, status)
        assert content_type in response["content"], (
            f"{op.op_id} {status}: {content_type} is not among {list(response['content'])}")
        for name, spec in response.get("headers", {}).items():
            assert not spec.get("required") or name in headers, f"{op.op_id}: no {name}"
        if content_type == "application/json":
            validate(body, at + pointer("content", content_type, "schema"))
        self.checked.add((op.op_id, status))

    def unchecked(self) -> list[str]:
        """Operations whose 200 no call has checked yet."""
        return [op.op_id for op in OPERATIONS if (op.op_id, 200) not in self.checked]
