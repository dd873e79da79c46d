"""A deleted search's Redis keys go with it (``webapp.searches.redis_cleanup``): a one-shot search's supernet
checkpoint and weights, a weight search's keys and the engine's markers; another search's keys stay."""
from __future__ import annotations

from tests.engine.conftest import launched

TINY = {"kind": "oneshot", "space": {"name": "cell", "stages": 2, "cells_per_stage": 1, "channels": 8},
        "dataset": "digits", "oneshot": {"strategy": {"name": "random", "seed": 1, "params": {"max_evaluations": 4}}}}


def test_deleting_a_search_removes_its_redis_keys_and_no_others(engine, monkeypatch):
    from webapp.messaging import oneshot_transport, transport
    from webapp.services import lifecycle

    monkeypatch.setattr(lifecycle.dispatch, "start_loop", lambda search_id: None)  # no loop needed here
    doomed, kept = launched("doomed", TINY), launched("kept", TINY)
    redis_ = transport.client()
    for search in (doomed, kept):
        oneshot_transport.put_checkpoint(search.pk, b"checkpoint")
        oneshot_transport.put_supernet(search.pk, "abc", b"weights")
        redis_.set(f"nas:ne:{search.pk}:state", b"x")
        transport.mark_done(search.pk, 7)
        transport.push(search.pk, {"kind": "noise"})

    def keys(search_id: int) -> list[bytes]:
        return [k for k in redis_.scan_iter() if f":{search_id}:" in k.decode() or k.decode().endswith(f":{search_id}")]

    assert len(keys(doomed.pk)) >= 5
    before = sorted(keys(kept.pk))
    doomed.delete()
    assert keys(doomed.pk) == []
    assert sorted(keys(kept.pk)) == before and oneshot_transport.checkpoint(kept.pk) == b"checkpoint"
