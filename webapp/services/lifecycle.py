"""What a user does to a search: create, edit (while it is a draft), launch, stop, resume, clone. Views, the API
and the ``search`` command call these; they never touch individuals (only the search's loop writes those)."""
from __future__ import annotations

import time
from typing import Any

from django.db import transaction
from django.utils import timezone

from webapp.searches import accounting, broadcast
from webapp.messaging import dispatch, transport
from webapp.notifications import outbox
from webapp.searches.config import (ConfigError, check_config, check_dataset_installed, check_sources_visible,
                                    planned_evaluations)
from webapp.services import queries
from webapp.services.datasets import resolve_dataset
from webapp.searches.models import Search


class ActionError(ValueError):
    """An action that does not apply to the search in its present state (e.g. resuming a finished one)."""


class InvalidName(ActionError):
    """A search name that is not 1 to 200 printable characters."""


#: The longest name a search may have (the column's length).
NAME_LENGTH = 200


def check_name(name: Any) -> str:
    """The name without surrounding spaces: 1 to 200 printable characters, else :class:`InvalidName`."""
    if not isinstance(name, str):
        raise InvalidName(f"A search's name must be text (got {type(name).__name__}).")
    name = name.strip()
    if not name:
        raise InvalidName("A search needs a name.")
    if len(name) > NAME_LENGTH:
        raise InvalidName(f"A search's name has at most {NAME_LENGTH} characters (got {len(name)}).")
    bad = next((i for i, char in enumerate(name) if not char.isprintable()), None)
    if bad is not None:
        raise InvalidName(f"A search's name must be printable characters only (got {name[bad]!r} at {bad + 1}).")
    return name


def create_search(owner, name: str, config: Any) -> Search:
    """A draft search with its name and configuration checked (:class:`ActionError` for the name,
    :class:`~webapp.searches.config.ConfigError` for the configuration); nothing is saved if either is bad."""
    checked = resolve_dataset(check_config(config), owner)  # a registered set: the owner's or a shared one
    check_sources_visible(checked, queries.visible_searches(owner))  # seed 001: another user's best stays theirs
    check_dataset_installed(checked)
    name = check_name(name)
    return Search.objects.create(
        owner=owner, name=name, config=checked, evaluations_total=planned_evaluations(checked)
    )


def update_draft(search: Search, name: Any, config: Any) -> Search:
    """Change a draft's name and configuration, both checked as at creation; :class:`ActionError` once it was
    launched (nothing changes then, nor when either is bad)."""
    checked = resolve_dataset(check_config(config), search.owner)
    check_sources_visible(checked, queries.visible_searches(search.owner))
    check_dataset_installed(checked)
    name = check_name(name)
    changed = Search.objects.filter(pk=search.pk, status=Search.Status.DRAFT).update(
        name=name, config=checked, evaluations_total=planned_evaluations(checked))
    if not changed:
        search.refresh_from_db(fields=["status"])
        raise ActionError(f"Only a draft can be edited; this one is {search.status}: clone it to change it.")
    search.name, search.config, search.evaluations_total = name, checked, planned_evaluations(checked)
    return search


def start_loop(search: Search) -> None:
    """The search's loop starts once the caller's transaction commits."""
    transport.set_stopped(search.pk, False)
    transaction.on_commit(lambda: dispatch.start_loop(search.pk))


def launch(search: Search) -> Search:
    """Start a draft; :class:`ActionError` (nothing changes) when it is not a draft, or when its dataset is not
    installed (its files removed since it was created)."""
    try:
        if search.status == Search.Status.DRAFT:
            check_dataset_installed(search.config)
    except ConfigError as error:
        raise ActionError(f"Cannot launch: {error.args[0].split(': ', 1)[-1]}") from None
    with transaction.atomic():
        now = timezone.now()  # one launch wins when two arrive at once (two tabs, a double click)
        if not Search.objects.filter(pk=search.pk, status=Search.Status.DRAFT).update(
                status=Search.Status.RUNNING, started=now):
            search.refresh_from_db(fields=["status"])
            raise ActionError(f"Only a draft search can be launched; this one is {search.status}.")
        search.status, search.started = Search.Status.RUNNING, now
        broadcast.notify(search.pk, "search.status", {"status": search.status, "reason": "launched"})
        start_loop(search)
    return search


def stop(search: Search) -> Search:
    """Stop handing out work; queued evaluations are skipped, running ones finish and are kept for a resume."""
    if search.status not in (Search.Status.RUNNING, Search.Status.STOPPING):
        raise ActionError(f"Only a running search can be stopped; this one is {search.status}.")
    transport.set_stopped(search.pk, True)
    with transaction.atomic():
        # A live loop sees "stopping", records what is under way and ends itself; without one (no control worker
        # yet, or its worker died) stop at once, and the search's running time stops with it.
        row = Search.objects.select_for_update().get(pk=search.pk)
        held = row.lease_owner and row.lease_expires and row.lease_expires > timezone.now()
        search.status = Search.Status.STOPPING if held else Search.Status.STOPPED
        search.status_reason = "stopped by its owner"
        if not held and row.stats:
            accounting.end_period(row.stats, time.time())
        Search.objects.filter(pk=search.pk).update(status=search.status, status_reason=search.status_reason,
                                                   stats=row.stats)
        ended = broadcast.notify(search.pk, "search.status", {"status": search.status, "reason": search.status_reason})
        if search.status == Search.Status.STOPPED:  # ended here (a live loop announces its own end)
            outbox.search_ended(search, ended.seq)
    return search


def resume(search: Search) -> Search:
    if search.status not in (Search.Status.STOPPED, Search.Status.FAILED, Search.Status.STOPPING):
        raise ActionError(f"Only a stopped search can be resumed; this one is {search.status}.")
    with transaction.atomic():
        Search.objects.filter(pk=search.pk).update(status=Search.Status.RUNNING, status_reason="")
        search.status, search.status_reason = Search.Status.RUNNING, ""
        broadcast.notify(search.pk, "search.status", {"status": search.status, "reason": "resumed"})
        start_loop(search)
    return search


def clone(search: Search, owner, name: str | None = None) -> Search:
    """A new draft with the same configuration (edit and launch it)."""
    copy = create_search(owner, name or f"{search.name[:NAME_LENGTH - 7]} (copy)", search.config)
    copy.cloned_from = search
    copy.save(update_fields=["cloned_from"])
    return copy
