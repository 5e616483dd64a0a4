"""A checked record's repairs, told as text: the summary its result carries
(`openrelay: {repairs, valid, model_calls, repair_history, errors}`) for the results
view and a row's detail, and a job's counts of checked answers for the detail pane.

Pure: no Textual, no HTTP."""

from __future__ import annotations

from typing import Any

EXTENSIONS = "openrelay"


def repair_summary(item: dict[str, Any]) -> dict[str, Any] | None:
    """The summary of one result (a Relay results row, an OpenAI output or error line,
    or a row detail's response); None for a record that was not checked."""
    found = item.get(EXTENSIONS)
    if not isinstance(found, dict):
        response = item.get("response")
        body = response.get("body") if isinstance(response, dict) else None
        found = body.get(EXTENSIONS) if isinstance(body, dict) else None
    return found if isinstance(found, dict) and "repairs" in found else None


def repairs_cell(summary: dict[str, Any] | None) -> str:
    """`✓` valid at once, `✓ 2 fixes` repaired, `✗ invalid` after its repairs; ""."""
    if summary is None:
        return ""
    repairs = int(summary.get("repairs") or 0)
    if summary.get("valid") is False:
        return "✗ invalid"
    return f"✓ {repairs} fix{'es' if repairs != 1 else ''}" if repairs else "✓"


def repairs_text(summary: dict[str, Any] | None) -> str:
    """`JSON valid after 1 repair (2 model calls)`, then each repaired call's errors."""
    if summary is None:
        return ""
    repairs = int(summary.get("repairs") or 0)
    calls = int(summary.get("model_calls") or repairs + 1)
    state = "JSON valid" if summary.get("valid") is not False else "JSON still invalid"
    head = (f"{state} after {repairs} repair{'s' if repairs != 1 else ''} "
            f"({calls} model call{'s' if calls != 1 else ''})" if repairs else
            f"{state} at once")
    lines = [head]
    for entry in summary.get("repair_history") or []:
        if isinstance(entry, dict):
            errors = "; ".join(str(e) for e in entry.get("errors") or [])
            lines.append(f"  call {entry.get('call')}: {errors}")
    if summary.get("valid") is False and summary.get("errors"):
        lines.append(f"  last answer: {'; '.join(str(e) for e in summary['errors'])}")
    return "\n".join(lines)


def outputs_line(outputs: dict[str, Any] | None) -> str | None:
    """The detail pane's line for a job with checked answers; None without any."""
    if not isinstance(outputs, dict) or not any(outputs.get(k) for k in
                                                ("valid", "repaired", "invalid")):
        return None
    return (f"[dim]checked JSON[/dim] {int(outputs.get('valid') or 0)} valid · "
            f"{int(outputs.get('repaired') or 0)} repaired · "
            f"{int(outputs.get('invalid') or 0)} invalid")
