"""`bonsai-tenant usage`: the tokens each tenant used, per model and UTC day, as a table or JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence

from .store import UsageRow

COLUMNS = ("day", "tenant", "model", "requests", "prompt_tokens", "completion_tokens", "total_tokens")


def totals(rows: Sequence[UsageRow]) -> dict[str, int]:
    """Requests and tokens of all `rows` together."""
    sums = {k: sum(getattr(r, k) for r in rows) for k in ("requests", "prompt_tokens", "completion_tokens")}
    return {**sums, "total_tokens": sums["prompt_tokens"] + sums["completion_tokens"]}


def as_json(rows: Sequence[UsageRow]) -> str:
    return json.dumps({"usage": [r.to_dict() for r in rows], "total": totals(rows)}, indent=2)


def as_table(rows: Sequence[UsageRow]) -> str:
    """Aligned columns (numbers right-aligned), one line per row, then the total."""
    cells = [list(COLUMNS)] + [[str(r.to_dict()[c]) for c in COLUMNS] for r in rows]
    total = totals(rows)
    cells.append(["total", "", "", *(str(total[c]) for c in COLUMNS[3:])])
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]

    def line(values: list[str]) -> str:
        return "  ".join(v.ljust(w) if i < 3 else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths, strict=True))).rstrip()

    body = [line(v) for v in cells]
    rule = "  ".join("-" * w for w in widths)
    return "\n".join([body[0], rule, *body[1:-1], rule, body[-1]])
