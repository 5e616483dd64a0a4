"""Files: uploaded batch inputs and written result files, as the rest of Relay sees them."""

from __future__ import annotations

from dataclasses import dataclass

BATCH = "batch"
BATCH_OUTPUT = "batch_output"


@dataclass(frozen=True)
class FileRecord:
    id: str
    workspace_id: int
    filename: str
    purpose: str
    bytes: int
    created_at: float
    path: str
    status: str = "processed"
