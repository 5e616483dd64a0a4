"""Re-vendor `schemas.json` from OpenAI's published description (run by hand):

    python tests/api/openai_schemas/vendor.py PATH/TO/openai-openapi/openapi.json COMMIT DATE

It keeps the schemas the conformance test validates against (`ROOTS`) and every schema
they reach through `$ref`, unchanged. `BatchRequestOutput`, the line of a batch's
output and error files, left the description in June 2025; it is kept as the last
version that had it published it (`batch_request_output.json`, see README.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
ROOTS = ("Batch", "ListBatchesResponse", "OpenAIFile", "ListFilesResponse",
         "DeleteFileResponse", "ErrorResponse", "Response", "CreateModerationResponse",
         "CreateChatCompletionResponse")
PREFIX = "#/components/schemas/"


def refs(node: Any) -> set[str]:
    """The names of the schemas `node` refers to."""
    if isinstance(node, dict):
        found = {node["$ref"].removeprefix(PREFIX)} if "$ref" in node else set()
        return found.union(*(refs(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(refs(v) for v in node))
    return set()


def closure(schemas: dict[str, Any], roots: tuple[str, ...]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    waiting = list(roots)
    while waiting:
        name = waiting.pop()
        if name not in kept:
            kept[name] = schemas[name]
            waiting.extend(refs(schemas[name]))
    return dict(sorted(kept.items()))


def main(spec: str, commit: str, date: str) -> None:
    schemas = json.loads(Path(spec).read_text())["components"]["schemas"]
    kept = closure(schemas, ROOTS)
    kept["BatchRequestOutput"] = json.loads((HERE / "batch_request_output.json").read_text())
    document = {"source": "https://github.com/openai/openai-openapi (openapi.json)",
                "commit": commit, "date": date, "roots": [*ROOTS, "BatchRequestOutput"],
                "schemas": kept}
    (HERE / "schemas.json").write_text(json.dumps(document, indent=1, sort_keys=False) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:4])
