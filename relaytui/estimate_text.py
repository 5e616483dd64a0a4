"""A dry run's answer (`?dry_run=true`: the batch's estimate) as lines of text, for
`relay submit --dry-run` and the TUI's upload form."""

from __future__ import annotations

from typing import Any


def estimate_lines(answer: dict[str, Any]) -> list[str]:
    """The whole batch's figures first, then each model's, the budget and the problems."""
    lines = [f"estimate: {answer['rows']} rows, {answer['input_tokens']} input + "
             f"{answer['output_tokens']} output tokens, ${answer['cost_usd']} "
             f"(discount {answer['discount']}), drains in ~{answer['drain_s']:.0f}s"]
    for model in answer.get("by_model", []):
        sources = ", ".join(f"{n} {s}" for s, n in model["output_tokens"]["sources"].items())
        lines.append(f"  {model['model']}: {model['rows']} rows, output from {sources}, "
                     f"${model['cost_usd']}, {model['drain_s']:.0f}s ({model['drain_limit']})")
    budget = answer.get("budget")
    if budget is not None:
        lines.append(f"  budget: ${budget.get('remaining_usd')} left, "
                     f"{'covers it' if budget.get('covers') else 'does NOT cover it'}")
    for problem in answer.get("problems", []):
        error = problem.get("error", problem)
        lines.append(f"  problem: {error.get('message')}"
                     + (f" ({error['param']})" if error.get("param") else ""))
    return lines
