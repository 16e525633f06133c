"""Words for counts in what llmbench prints: "1 run", "2 runs", "1 entry", "3 entries"."""

IRREGULAR = {"entry": "entries", "sweep entry": "sweep entries", "is": "are", "was": "were"}


def plural(count: int, noun: str) -> str:
    """``noun`` as it reads after ``count``: singular for exactly one."""
    if count == 1:
        return noun
    return IRREGULAR.get(noun, noun if noun.endswith("s") else noun + "s")


def counted(count: int, noun: str) -> str:
    """``"<count> <noun>"`` with the noun's plural where the count is not one."""
    return f"{count:,} {plural(count, noun)}"
