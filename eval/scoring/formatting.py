"""How the reports write their tables and cells: one layout per kind of table, one rule per kind
of cell, shared by eval.compare, eval.summary and the analyses (eval.analyze)."""

from __future__ import annotations

DASH = "–"  # an undefined cell (a share of nothing, a mean over no question): never shown as 0


def markdown(head: list[str], rows: list[list[str]]) -> str:
    """A markdown table with padded columns (readable in a terminal and in MLflow)."""
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    return "\n".join([line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def aligned(head: list[str], rows: list[list[str]]) -> str:
    """Plain padded columns split by two spaces, the head underlined with dashes (eval.grid's dry
    run: a terminal listing, parsed by eye and by tests)."""
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip()
                     for row in [head, ["-" * w for w in widths], *rows])


def piped(head: list[str], row: list[str]) -> str:
    """A one-row plain-text table, columns split by ` | ` and the head underlined with `-+-`
    (eval.run's and eval.summary's table of a run)."""
    widths = [max(len(a), len(b)) for a, b in zip(head, row)]
    line = lambda cells: " | ".join(c.ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    return "\n".join([line(head), "-+-".join("-" * w for w in widths), line(row)])


def column_name(column: tuple[str, str] | tuple[str, str, str]) -> str:
    """A column's header: `dataset · LM` (the LM without its provider), then the setting if it is not
    the pool. A column is (dataset, LM), or (setting, dataset, LM) where the setting is part of it."""
    *setting, dataset, lm = column
    return f"{dataset} · {short_lm(lm)}" + (f" · {setting[0]}" if setting and setting[0] != "pool" else "")


def short_lm(lm: str) -> str:
    """An LM's name without its provider (`openai/gpt-4.1-mini` -> `gpt-4.1-mini`), as table cells show it."""
    return lm.rsplit("/", 1)[-1]


def interval(b) -> str:
    """A bootstrap's difference with its interval, in points: `+1.2 [-0.3, +2.8]` (eval.scoring.stats.Bootstrap)."""
    return f"{b.diff:+.1f} [{b.low:+.1f}, {b.high:+.1f}]"


def number(x: float, digits: int = 1) -> str:
    """`x` to `digits` decimals; NaN (undefined) as a dash."""
    return DASH if x != x else f"{x:.{digits}f}"


def pct(share: float, digits: int = 1, suffix: str = "") -> str:
    """A share (0-1) as a percentage to `digits` decimals, then `suffix` (e.g. "%"); NaN as a dash."""
    return DASH if share != share else f"{100 * share:.{digits}f}{suffix}"


def fmt_p(p: float, digits: int = 1) -> str:
    """A p-value: four decimals, or scientific notation (`digits` decimals) below 1e-4."""
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.{digits}e}"
