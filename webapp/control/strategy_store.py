"""A search's strategy state in the database: the compact part in ``Search.strategy_state``, and each list the
strategy declares append-only (``Strategy.APPEND_ONLY``: an archive's candidates and results) one ``ArchiveRow``
per entry.

Saving the whole ``state_dict()`` after every result rewrote the whole archive each time (about 1 MB of JSON
at 2,000 individuals, twice per loop cycle); now a save writes the entries added since the last one. Loading
joins them again, so ``load`` returns exactly the strategy ``save`` saw. A state saved whole by an older
version (its lists inside it) still loads, and is split at its next save.
"""
from __future__ import annotations

from typing import Any

from nas.spaces.base import SearchSpace
from nas.strategies import Strategy, strategy_from_state
from webapp.searches import beliefs
from webapp.searches.models import ArchiveRow, Search

#: The state's key that holds how many rows of each append-only list belong to it.
ROWS = "archive_rows"
#: The state's key that holds the search's pruner state (``webapp.control.pruning``), saved beside the strategy's.
PRUNER = "pruner"
#: What else the state keeps beside the strategy's own: the pruner's, and the strategy's beliefs over time.
BESIDE = (PRUNER, beliefs.KEY)


def save(search: Search, strategy: Strategy) -> None:
    """Set ``search.strategy_state`` (the caller saves the search, in the same transaction) and write the rows of
    the append-only lists that are not written yet."""
    state = strategy.state_dict()
    saved = search.strategy_state or {}
    split = not any(key in saved for key in strategy.APPEND_ONLY)  # a whole state's rows are not written yet
    have = saved.get(ROWS, {}) if split else {}
    rows, counts = [], {}
    for key in strategy.APPEND_ONLY:
        entries = state.pop(key)
        counts[key] = len(entries)
        rows.extend(ArchiveRow(search_id=search.pk, kind=key, index=i, data=entries[i])
                    for i in range(have.get(key, 0), len(entries)))
    if rows:
        ArchiveRow.objects.bulk_create(rows)
    search.strategy_state = {**state, ROWS: counts, **{key: saved[key] for key in BESIDE if key in saved}}


def save_beliefs(search: Search, strategy: Strategy) -> None:
    """After results: what the strategy believes now, added to what its state keeps (``webapp.searches.beliefs``;
    nothing for a strategy that shows no beliefs). The caller saves the search."""
    found = strategy.beliefs()
    if found is not None:
        search.strategy_state[beliefs.KEY] = beliefs.recorded(search.strategy_state.get(beliefs.KEY), found)


def load(search: Search, space: SearchSpace) -> Strategy:
    """The strategy as last saved: the compact state and its rows, joined. Rows past the saved counts (none are
    expected: rows and state are written in one transaction) are deleted, so the next save can write those
    places again."""
    state: dict[str, Any] = dict(search.strategy_state)
    for key in BESIDE:
        state.pop(key, None)
    if ROWS in state:
        counts = state.pop(ROWS)
        for key, count in counts.items():
            ArchiveRow.objects.filter(search=search, kind=key, index__gte=count).delete()
            rows = ArchiveRow.objects.filter(search=search, kind=key).order_by("index").values_list("data", flat=True)
            entries = list(rows.iterator(chunk_size=2000))
            if len(entries) != count:
                raise ValueError(f"search {search.pk}: the strategy state names {count} {key} but the database "
                                 f"holds {len(entries)}")
            state[key] = entries
    else:
        ArchiveRow.objects.filter(search=search).delete()  # a whole state: its next save writes every row
    return strategy_from_state(space, state)
