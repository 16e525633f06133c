"""Words in what llmbench prints: counts ("1 run", "2 runs", "3 entries") and the share of
the step time an item of "why slower" could explain, said the same way everywhere."""

IRREGULAR = {"entry": "entries", "sweep entry": "sweep entries", "is": "are", "was": "were"}


def plural(count: int, noun: str) -> str:
    """``noun`` as it reads after ``count``: singular for exactly one."""
    if count == 1:
        return noun
    return IRREGULAR.get(noun, noun if noun.endswith("s") else noun + "s")


def counted(count: int, noun: str) -> str:
    """``"<count> <noun>"`` with the noun's plural where the count is not one."""
    return f"{count:,} {plural(count, noun)}"


def effect_words(low: float | None, high: float | None) -> str:
    """How much of the step time an item of "why slower" could explain, as
    ``llmbench explain`` and the report's page both say it: a range, one figure where
    both ends agree, or that it has no figure."""
    if low is None or high is None:
        return "no figure for its share of the step time"
    if low == high:
        return f"could explain {high:g} % of the step time"
    return f"could explain {low:g}-{high:g} % of the step time"
