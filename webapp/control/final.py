"""The final training phase of a search (``final: {"top": k, "epochs": E}``): once the search's own budget is
spent, the genomes it is given are retrained from scratch for ``E`` epochs, as evaluations through the same
queue, signing and recording as any other (on gangs where the workers have them), and recorded as *final runs*
(``Individual.role == "final"``) beside the search's individuals. The strategy is never told of them: they are
not part of the search. The best final run is the search's result (``webapp.searches.final_runs.best_run``):
its files are always kept, whatever ``evaluation.keep_weights`` says, so the Best zip holds its weights.

A loop uses it in five calls, whatever kind it is (the ``architecture`` loop here; the ``oneshot`` kind's too)::

    final = FinalTraining(search)            # final.wanted: the search asked for a final training
    if final.wanted and not final.started(): # its own budget spent, nothing of it in flight
        with fenced(...) as search:
            runs = final.start(search, space, genomes)   # the genomes, best first: created once, as queued runs
        final.open()                          # before sending: every final run's files are kept by the workers
        send(runs)                            # each packet item with final.packet(config, individual)
    ...
    final.record(search, individual, message, nbytes)   # a final run's Result, in the loop's fenced collect
    final.fail(search, individual, reason, text)        # a final run that used up its attempts

Every write is idempotent and fenced by the caller, so a stop keeps the runs that finished and a resume sends
only the rest (they are queued, never sent, or lost: the loop's usual resend rules).
"""
from __future__ import annotations

from typing import Any

from django.db.models import Max

from nas.spaces.base import SearchSpace
from nas.strategies import Candidate
from webapp.control import kept, recording
from webapp.messaging import messages, transport
from webapp.searches import final_runs
from webapp.searches.models import Individual, Search

#: A final run's operator (the individuals' ``operator``): it retrains its parent, the genome of the same key.
OPERATOR = "final"


class FinalTraining:
    """The final training of one search, as its loop drives it (see the module's docstring)."""

    def __init__(self, search: Search) -> None:
        self.search_id = search.pk
        self.plan = final_runs.plan_of(search.config)

    @property
    def wanted(self) -> bool:
        return self.plan is not None

    def started(self) -> bool:
        """Its runs exist (they are created together, so a resume never creates them twice)."""
        return final_runs.runs(self.search_id).exists()

    def start(self, search: Search, space: SearchSpace, genomes: list[dict[str, Any]]) -> list[Individual]:
        """Create a queued final run for each of the first ``top`` genomes (best first), numbered after every
        individual of the search; inside the caller's fenced transaction. Returns them (none twice: if the runs
        exist already, those)."""
        existing = list(final_runs.runs(search))
        if existing or self.plan is None:
            return existing
        after = Individual.objects.filter(search=search).aggregate(last=Max("number"))["last"]
        first = 0 if after is None else after + 1
        candidates = []
        for offset, genome in enumerate(genomes[:self.plan["top"]]):
            key = space.key(genome)
            candidates.append(Candidate(id=first + offset, genome=genome, key=key, generation=0, parents=(key,),
                                        operator=OPERATOR))
        return recording.create_individuals(search, space, candidates, role=Individual.Role.FINAL)

    def open(self) -> None:
        """Before final runs are sent: workers keep the files of any result (the search's admission threshold,
        which made them skip exports below its best, does not apply to final runs)."""
        transport.set_admission(self.search_id, None)

    def packet(self, config: dict[str, Any], individual: Individual) -> dict[str, Any]:
        """What a packet item trains: the search's training and evaluation, with a final run's epochs and its
        files kept."""
        if individual.role != Individual.Role.FINAL or self.plan is None:
            return {"training": config["training"], "evaluation": config["evaluation"]}
        evaluation = dict(config["evaluation"])
        if evaluation.get("mode") == "train":
            evaluation["keep_weights"] = max(int(evaluation.get("keep_weights") or 0), 1)
        evaluation.pop("report_every", None)  # no early stopping: a final run trains its whole budget
        return {"training": {**config["training"], "epochs": self.plan["epochs"]}, "evaluation": evaluation}

    def record(self, search: Search, individual: Individual, message: messages.Result, nbytes: int) -> bool:
        """A final run's result: recorded (with its files) and not told to anyone; False for a late duplicate."""
        if recording.record_result(search, individual, message, nbytes=nbytes) is None:
            return False
        kept.keep_files(search, [individual])
        return True

    def fail(self, search: Search, individual: Individual, reason: str, text: str) -> bool:
        """A final run failed without a worker's result (``worker_lost``)."""
        return recording.fail_individual(search, individual, reason, text) is not None

    def summary(self, search: Search) -> dict[str, Any] | None:
        """The ``search.final`` event's data (the page's panel and the API's ``final``)."""
        return final_runs.summary(search)
