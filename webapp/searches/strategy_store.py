"""A search's strategy state in the database: the compact part in ``Search.strategy_state``, the archive (every
candidate asked and every result told, which only grows) one ``ArchiveRow`` per entry.

Saving the whole ``state_dict()`` after every result rewrote the whole archive each time (about 1 MB of JSON
at 2,000 individuals, twice per loop cycle); now a save writes the rows added since the last one. Loading
joins them again, so ``load`` returns exactly the strategy ``save`` saw. A state saved whole by an older
version (``candidates`` inside it) still loads, and is split at its next save.
"""
from __future__ import annotations

from typing import Any

from nas.spaces.base import SearchSpace
from nas.strategies import strategy_from_state
from nas.strategies.archive import ArchiveStrategy
from webapp.searches.models import ArchiveRow, Search

#: The state's key that holds how many archive rows of each kind belong to it.
ROWS = "archive_rows"
#: Row kind -> the state's list (plain strings: the counts go through JSON).
LISTS = {ArchiveRow.Kind.CANDIDATE.value: "candidates", ArchiveRow.Kind.RESULT.value: "results"}


def save(search: Search, strategy: ArchiveStrategy) -> None:
    """Set ``search.strategy_state`` (the caller saves the search, in the same transaction) and write the archive
    rows it refers to that are not written yet."""
    state = strategy.state_dict()
    saved = search.strategy_state or {}
    have = saved.get(ROWS, {}) if "candidates" not in saved else {}
    rows, counts = [], {}
    for kind, key in LISTS.items():
        entries = state.pop(key)
        counts[kind] = len(entries)
        rows.extend(ArchiveRow(search_id=search.pk, kind=kind, index=i, data=entries[i])
                    for i in range(have.get(kind, 0), len(entries)))
    if rows:
        ArchiveRow.objects.bulk_create(rows)
    search.strategy_state = {**state, ROWS: counts}


def load(search: Search, space: SearchSpace) -> ArchiveStrategy:
    """The strategy as last saved: the compact state and its archive rows, joined. Rows past the saved counts
    (none are expected: rows and state are written in one transaction) are deleted, so the next save can write
    those places again."""
    state: dict[str, Any] = dict(search.strategy_state)
    if ROWS in state:
        counts = state.pop(ROWS)
        for kind, key in LISTS.items():
            ArchiveRow.objects.filter(search=search, kind=kind, index__gte=counts[kind]).delete()
            rows = ArchiveRow.objects.filter(search=search, kind=kind).order_by("index").values_list("index", "data")
            entries = [data for _, data in rows.iterator(chunk_size=2000)]
            if len(entries) != counts[kind]:
                raise ValueError(f"search {search.pk}: the strategy state names {counts[kind]} {key} but the "
                                 f"database holds {len(entries)}")
            state[key] = entries
    else:
        ArchiveRow.objects.filter(search=search).delete()  # a whole state: its next save writes every row
    return strategy_from_state(space, state)
