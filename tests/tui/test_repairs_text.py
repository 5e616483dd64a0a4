"""How the TUI tells a checked record's repairs and a job's checked answers."""

from __future__ import annotations

from relaytui.repairs import outputs_line, repair_summary, repairs_cell, repairs_text

REPAIRED = {"repairs": 1, "valid": True, "model_calls": 2, "repair_history": [
    {"call": 1, "errors": ["$.label: enum: 'meh' is not one of ['a', 'b']"]}]}


def test_a_results_row_tells_its_repairs() -> None:
    assert repair_summary({"custom_id": "r", "openrelay": REPAIRED}) == REPAIRED
    line = {"response": {"body": {"choices": [], "openrelay": REPAIRED}}}
    assert repair_summary(line) == REPAIRED
    assert repair_summary({"openrelay": {"tool_rounds": 1}}) is None
    assert repairs_cell(REPAIRED) == "✓ 1 fix"
    assert repairs_cell({"repairs": 0, "valid": True}) == "✓"
    assert repairs_cell({"repairs": 2, "valid": False}) == "✗ invalid"
    assert repairs_text(REPAIRED) == (
        "JSON valid after 1 repair (2 model calls)\n"
        "  call 1: $.label: enum: 'meh' is not one of ['a', 'b']")
    assert repairs_text({"repairs": 0, "valid": True}) == "JSON valid at once"
    assert repairs_text({"repairs": 0, "valid": False, "errors": ["$: json: x"]}) == (
        "JSON still invalid at once\n  last answer: $: json: x")


def test_the_detail_pane_counts_checked_answers_only_when_there_are_some() -> None:
    assert outputs_line({"valid": 3, "repaired": 1, "invalid": 0}) == (
        "[dim]checked JSON[/dim] 3 valid · 1 repaired · 0 invalid")
    assert outputs_line({"valid": 0, "repaired": 0, "invalid": 0}) is None
    assert outputs_line(None) is None
