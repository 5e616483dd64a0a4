"""Token pricing: usage in, nano-USD out, exact (decimal arithmetic, one rounding)."""

from __future__ import annotations

import functools
from decimal import ROUND_HALF_EVEN, Decimal

from daemon.domain.outcome import Usage

NANO_PER_USD_PER_MTOK = Decimal(1000)  # 1 USD per million tokens = 1,000 nano-USD per token
STANDARD_DISCOUNT = Decimal("0.5")  # OpenAI-dialect standard batches: half the online price


def cost_nano_usd(usage: Usage, *, input_usd_per_mtok: float, output_usd_per_mtok: float,
                  discount: Decimal | float = 0) -> int:
    """The price of one row. Prices go through `str` so 0.15 is exactly 0.15."""
    rate_in, rate_out = _nano_per_token(input_usd_per_mtok, output_usd_per_mtok, discount)
    nano = rate_in * usage.prompt_tokens + rate_out * usage.completion_tokens
    return int(nano.to_integral_value(rounding=ROUND_HALF_EVEN))


@functools.lru_cache(maxsize=256)
def _nano_per_token(input_usd_per_mtok: float, output_usd_per_mtok: float,
                    discount: Decimal | float) -> tuple[Decimal, Decimal]:
    scale = NANO_PER_USD_PER_MTOK * (1 - Decimal(str(discount)))
    return (Decimal(str(input_usd_per_mtok)) * scale, Decimal(str(output_usd_per_mtok)) * scale)

