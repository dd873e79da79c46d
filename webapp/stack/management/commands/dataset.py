"""``python manage.py dataset add|list|show``: register a user's own data set by path, and see what was found.

    python manage.py dataset add parts /data/parts            # a folder of class folders of PNG/JPEG images
    python manage.py dataset add cells /data/cells.npz --shared --owner alice
    python manage.py dataset add photos /data/photos.zip      # a .zip/.tar of class folders: unpacked, kept
    python manage.py dataset list
    python manage.py dataset show parts

A thin layer over ``webapp.services.datasets`` (the service the API and pages call). The path must lie under
one of ``NAS_DATASET_ROOTS`` (by default ``NAS_DATA_DIR``). Every refusal is one line on stderr and a non-zero
exit code; nothing is registered then.
"""
from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from webapp.datasets.models import DataSet
from evaluators.archives import SUFFIXES
from webapp.services import datasets, uploads
from webapp.stack.users import acting_user


def is_archive(path: str) -> bool:
    return path.lower().endswith(SUFFIXES)


class Command(BaseCommand):
    help = "Register a data set by path (dataset add NAME PATH), list them (dataset list), show one (dataset show NAME)."

    def add_arguments(self, parser):
        commands = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        add = commands.add_parser("add", help="scan and register a folder of class folders, a .npz file, or a "
                                              ".zip/.tar of class folders (unpacked under NAS_DATA_DIR)")
        add.add_argument("name")
        add.add_argument("path")
        add.add_argument("--shared", action="store_true", help="usable by every user (the owner must be staff)")
        add.add_argument("--owner", help="username (default: the first superuser)")
        commands.add_parser("list", help="every registered data set")
        show = commands.add_parser("show", help="one data set's scan, as JSON")
        show.add_argument("name")

    def handle(self, *args, **options):
        getattr(self, f"do_{options['action']}")(options)

    def do_add(self, options) -> None:
        register = uploads.register_archive_path if is_archive(options["path"]) else datasets.register
        try:
            found = register(acting_user(options["owner"], "--owner"), options["name"], options["path"],
                             options["shared"])
        except datasets.RegisterError as error:
            raise CommandError(str(error)) from None
        counts = ", ".join(f"{name} {count}" for name, count in zip(found.classes, found.counts))
        self.stdout.write(f"registered {found.name}: {found.images} images in {len(found.classes)} classes ({counts}); "
                          f"{found.channels} channel{'s' if found.channels > 1 else ''}; sizes "
                          f"{', '.join(list(found.sizes)[:3])}; {len(found.corrupt)} corrupt file(s) skipped; "
                          f"digest {found.digest[:12]}")
        for line in found.corrupt:
            self.stdout.write(f"  skipped {line}")

    def do_list(self, options) -> None:
        self.stdout.write(f"{'name':<20} {'owner':<12} {'shared':<6} {'kind':<6} {'images':>7} {'classes':>7}  path")
        for row in DataSet.objects.select_related("owner"):
            self.stdout.write(f"{row.name:<20} {row.owner.username:<12} {'yes' if row.shared else 'no':<6} "
                              f"{row.kind:<6} {row.images:>7} {len(row.classes):>7}  {row.path}")

    def do_show(self, options) -> None:
        found = DataSet.objects.select_related("owner").filter(name=options["name"]).first()
        if found is None:
            raise CommandError(f"no data set {options['name']!r} (see `manage.py dataset list`)")
        self.stdout.write(json.dumps(datasets.dataset_row(found), indent=2))
