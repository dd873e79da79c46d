"""What a user does with their own data sets: register one by path (scanned here, in the web process: Pillow
and NumPy, never torch), list the ones they may use, and resolve a search's ``"dataset": NAME`` to the
description its workers train on. The CLI (``manage.py dataset``), the JSON API and the pages call these.

Who may use what, as with searches (``queries.visible_searches``): a user sees and uses their own sets and the
ones marked shared (only staff may share one); staff see every set. Anyone else's set is "no such data set".
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet

from evaluators.catalog import DATASETS
from evaluators.data_files import Scan, ScanError, scan
from webapp.datasets.models import DataSet
from webapp.searches.checks import ConfigError

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
#: Names the API's paths use (``/api/datasets/uploads/``, ``/api/datasets/archives/``).
RESERVED = ("uploads", "archives")
NAME_RULE = "1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"


class RegisterError(ValueError):
    """A data set that is not registered, and why (nothing was saved)."""


def visible_datasets(user) -> QuerySet[DataSet]:
    """The sets ``user`` may see and use: their own and the shared ones; every set for staff."""
    if not getattr(user, "is_authenticated", False):
        return DataSet.objects.none()
    sets = DataSet.objects.select_related("owner")
    return sets if user.is_staff else sets.filter(Q(owner=user) | Q(shared=True))


def allowed_path(path: Any) -> Path:
    """``path`` with symlinks resolved, if it lies under one of ``NAS_DATASET_ROOTS``; :class:`RegisterError`."""
    if not isinstance(path, str) or not path.strip() or "\0" in path:
        raise RegisterError("A data set needs a path: a folder of class folders or a .npz file.")
    resolved = Path(path).expanduser().resolve()
    roots = [Path(root) for root in settings.NAS_DATASET_ROOTS]
    if not any(resolved.is_relative_to(root) for root in roots):
        raise RegisterError(f"{path} is outside the folders data sets may be registered from "
                            f"({', '.join(map(str, roots))}; the administrator sets NAS_DATASET_ROOTS).")
    return resolved


def check_name(name: Any) -> str:
    if not isinstance(name, str) or not NAME.match(name):
        raise RegisterError(f"A data set's name must be {NAME_RULE} (got {str(name)[:100]!r}).")
    if name in DATASETS:
        raise RegisterError(f"{name} is a built-in data set's name; choose another.")
    if name in RESERVED:
        raise RegisterError(f"{name} names a part of the data-set API (/api/datasets/{name}/); choose another.")
    if DataSet.objects.filter(name=name).exists():
        raise RegisterError(f"The name {name} is already used by a registered data set; choose another.")
    return name


def check_sharing(owner, shared: Any) -> bool:
    if shared and not owner.is_staff:
        raise RegisterError("Only staff may share a data set with every user.")
    return bool(shared)


def scanned(path: Path, shown: Any) -> Scan:
    """The scan of the set at ``path``; :class:`RegisterError` naming ``shown`` when it is refused."""
    try:
        return scan(path)
    except ScanError as error:
        raise RegisterError(str(error).replace(str(path), str(shown))) from None
    except OSError as error:
        raise RegisterError(f"{shown} cannot be read here: {error}") from None


def record(owner, name: str, shared: bool, path: Path, found: Scan, archive: str = "") -> DataSet:
    """Save what the scan ``found`` as ``name``; :class:`RegisterError` when the name was taken meanwhile."""
    try:
        with transaction.atomic():
            return DataSet.objects.create(
                owner=owner, name=name, shared=shared, kind=found.kind, path=str(path), digest=found.digest,
                classes=found.classes, counts=found.counts, sizes=found.sizes, channels=found.channels,
                corrupt=found.corrupt, archive=archive)
    except IntegrityError:  # registered under the same name by someone else meanwhile
        raise RegisterError(f"The name {name} is already used by a registered data set; choose another.") from None


def register(owner, name: Any, path: Any, shared: bool = False) -> DataSet:
    """Scan the set at ``path`` and record it as ``name``; :class:`RegisterError` (nothing saved) when the name
    is taken or malformed, the path is outside the allowed roots, or the scan refuses the set
    (``evaluators.data_files.scan``: one class, an empty class, grey and colour mixed, no readable file)."""
    name = check_name(name)
    shared = check_sharing(owner, shared)
    resolved = allowed_path(path)
    return record(owner, name, shared, resolved, scanned(resolved, path))


def dataset_row(dataset: DataSet) -> dict[str, Any]:
    """What the list, the API and the page show of one set."""
    return {"name": dataset.name, "owner": dataset.owner.username, "shared": dataset.shared, "kind": dataset.kind,
            "path": dataset.path, "digest": dataset.digest, "classes": dataset.classes, "counts": dataset.counts,
            "images": dataset.images, "imbalance": round(dataset.imbalance, 3), "sizes": dataset.sizes,
            "channels": dataset.channels, "corrupt": dataset.corrupt,
            "archive": Path(dataset.archive).name if dataset.archive else "", "created": dataset.created.isoformat()}


def resolve_dataset(config: dict[str, Any], owner) -> dict[str, Any]:
    """A checked configuration with its registered set's record under ``registered`` (what the workers are
    sent), looked up among the sets ``owner`` may use; :class:`ConfigError` on ``dataset`` when there is none of
    that name. Built-in sets pass unchanged."""
    name = config.get("dataset")
    if "data" not in config:
        return config
    found = visible_datasets(owner).filter(name=name).first()
    if found is None:
        mine = ", ".join(visible_datasets(owner).values_list("name", flat=True)[:20]) or "none yet"
        raise ConfigError("dataset", f"there is no data set {name!r}: the built-in ones are {', '.join(DATASETS)}; "
                                     f"the registered ones you may use are {mine} (manage.py dataset add NAME PATH)")
    registered = description(found)
    test = config["data"].get("test")
    if test:
        held = visible_datasets(owner).filter(name=test).first()
        if held is None:
            raise ConfigError("data.test", f"there is no registered data set {test!r} that you may use")
        if held.classes != found.classes or held.channels != found.channels:
            raise ConfigError("data.test", f"{test} must have the classes and channels of {name} (it has "
                                           f"{', '.join(held.classes)[:200]} with {held.channels} channel(s); "
                                           f"{name} has {', '.join(found.classes)[:200]} with {found.channels})")
        registered["held_out"] = description(held)
    return {**config, "registered": registered}


def description(found: DataSet) -> dict[str, Any]:
    """What a worker needs to read the set (``evaluators.catalog``'s registered description, less the search's
    data settings)."""
    return {"name": found.name, "kind": found.kind, "path": found.path, "digest": found.digest,
            "classes": found.classes, "channels": found.channels}
