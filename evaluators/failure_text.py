"""An exception as a failed evaluation's message: its type and message, then the last frames of its traceback
(paths outside the project cut to their file name), secrets removed. No torch, no Django: the worker
writes it (``evaluate``, the runner), and the individual's page reads it back (:func:`parse`) and cleans it again,
for messages recorded before it existed.

    ValueError: bad shape (3, 4)
    Traceback (last 2 frames):
      evaluators/training.py:88 in fit: loss = criterion(out, y)
      functional.py:3029 in cross_entropy: return torch._C._nn.cross_entropy_loss(...)
"""
from __future__ import annotations

import dataclasses
import os
import re
import traceback
from collections.abc import Mapping
from pathlib import Path

#: The project's root: paths under it are shown relative to it, any other path by its file name alone.
ROOT = Path(__file__).resolve().parent.parent
FRAMES = 6
HEADER = "Traceback (last "
#: Environment variables whose values are secrets wherever they appear in a message.
SECRET_NAME = re.compile(r"SECRET|KEY|TOKEN|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
#: ``scheme://user:password@host``: the credentials of a URL.
URL_CREDENTIALS = re.compile(r"([a-z][a-z0-9+.-]*://)[^/\s@]*@", re.IGNORECASE)
#: An absolute path to a file (``/usr/lib/python3.11/site-packages/torch/nn/functional.py``).
ABSOLUTE_PATH = re.compile(r"(?<![\w.])/(?:[^\s/:\"',()]+/)+([^\s/:\"',()]+)")
REDACTED = "[redacted]"


def short_path(path: str, root: Path = ROOT) -> str:
    """A path under the project relative to it; any other cut to its file name."""
    try:
        return Path(path).resolve().relative_to(root).as_posix()
    except (ValueError, OSError):
        return Path(path).name


def redact(text: str, environ: Mapping[str, str] | None = None, extra: tuple[str, ...] = (), root: Path = ROOT,
           paths: bool = True) -> str:
    """``text`` without secrets (values of secret-named environment variables, ``extra`` values, URL
    credentials) and, with ``paths``, with absolute paths outside the project cut to their file name (a
    traceback's; an exception's own message keeps its paths: "no dataset in /data/cifar10" must name it)."""
    environ = os.environ if environ is None else environ
    named = [value for name, value in environ.items() if SECRET_NAME.search(name)]
    secrets = [value for value in [*named, *extra] if value and len(value) >= 6]  # shorter: too common to hide
    for value in sorted(set(secrets), key=len, reverse=True):
        text = text.replace(value, REDACTED)
    text = URL_CREDENTIALS.sub(lambda m: m.group(1) + REDACTED + "@", text)
    if not paths:
        return text
    root_text = root.as_posix().rstrip("/") + "/"
    return ABSOLUTE_PATH.sub(lambda m: m.group(0)[len(root_text):] if m.group(0).startswith(root_text) else m.group(1),
                             text)


def describe(error: BaseException, frames: int = FRAMES) -> str:
    """The message of a failed evaluation that raised ``error``."""
    summary = traceback.extract_tb(error.__traceback__)[-frames:]
    lines = [f"{type(error).__name__}: {error}".strip()]
    if summary:
        lines.append(f"{HEADER}{len(summary)} frames):")
        lines += [f"  {short_path(f.filename)}:{f.lineno} in {f.name}: {(f.line or '').strip()}" for f in summary]
    return redact("\n".join(lines), paths=False)  # the frames' paths are short already


@dataclasses.dataclass(frozen=True)
class Failure:
    """A failure's message read back: the exception's type (empty when the message is not one), its message,
    and the traceback's lines."""

    kind: str
    text: str
    traceback: list[str]


HEAD = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning|Failure|Lost|Diverged|Invalid|"
                  r"TimedOut|Stopped)): ?(.*)$", re.DOTALL)


def parse(message: str, environ: Mapping[str, str] | None = None, extra: tuple[str, ...] = ()) -> Failure:
    """A recorded message as :class:`Failure`, cleaned again (:func:`redact`). Understands this module's
    messages and Python's own ``Traceback (most recent call last):`` blocks."""
    message = redact(message or "", environ, extra, paths=False)
    head, tail = message, ""
    for marker in ("\n" + HEADER, "\nTraceback (most recent call last):"):
        if marker in message:
            head, _, tail = message.partition(marker)
            tail = marker.strip() + tail
            break
    lines = [redact(line.rstrip(), {}, paths=True) for line in tail.splitlines()[1:] if line.strip()]
    if lines and HEAD.match(lines[-1].strip()) and not head.strip():
        head = lines.pop().strip()
    match = HEAD.match(head.strip())
    if match:
        return Failure(match.group(1), match.group(2).strip(), lines[-2 * FRAMES:])
    return Failure("", head.strip(), lines[-2 * FRAMES:])
