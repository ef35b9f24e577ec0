"""A refused URL row keeps its reason in ``extra`` as ``{"refused": reason}``
(failed and excluded rows keep none): the census of every store reads it back."""

from __future__ import annotations

import json


def reason_of(extra: str | None) -> str | None:
    """A refusal's reason from a row's ``extra``; None if it keeps none."""
    if not extra:
        return None
    try:
        value = json.loads(extra)
    except ValueError:
        return None
    reason = value.get("refused") if isinstance(value, dict) else None
    return None if reason is None else str(reason)
