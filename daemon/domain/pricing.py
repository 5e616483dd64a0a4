"""Token pricing: usage in, nano-USD out, exact in integers."""

from __future__ import annotations

from daemon.domain.outcome import Usage

NANO_PER_USD = 1_000_000_000
TOKENS_PER_MTOK = 1_000_000


def cost_nano_usd(usage: Usage, *, input_usd_per_mtok: float, output_usd_per_mtok: float,
                  discount: float = 0.0) -> int:
    """The price of one call. `discount` is the batch discount (0.5 = half price)."""
    usd = (usage.prompt_tokens * input_usd_per_mtok
           + usage.completion_tokens * output_usd_per_mtok) / TOKENS_PER_MTOK
    return round(usd * NANO_PER_USD * (1.0 - discount))
