"""A failed evaluation's message (issue 34 item 2): the exception's type and message, the last frames of its
traceback with paths outside the project cut to their file name, never a secret; and read back for the page."""
from __future__ import annotations

from pathlib import Path

from evaluators import failure_text
from evaluators.failure_text import describe, parse, redact


def _raise_deep(depth: int):
    if depth == 0:
        raise ValueError("bad shape (3, 4)")
    _raise_deep(depth - 1)


def test_describe_gives_type_message_and_the_last_frames_relative_to_the_project():
    try:
        _raise_deep(10)
    except ValueError as error:
        text = describe(error)
    lines = text.splitlines()
    assert lines[0] == "ValueError: bad shape (3, 4)"
    assert lines[1] == f"Traceback (last {failure_text.FRAMES} frames):"
    assert len(lines) == 2 + failure_text.FRAMES
    assert all(line.startswith("  tests/evaluators/test_failure_text.py:") for line in lines[2:])
    assert "raise ValueError" in lines[-1]
    assert str(failure_text.ROOT) not in text


def test_redact_removes_secret_environment_values_url_credentials_and_outside_paths():
    environ = {"SECRET_KEY": "django-signing-key-123", "NAS_TASK_KEY": "task-key-abcdef", "HOME": "/root",
               "SHORT_KEY": "abc"}
    text = ("failed with django-signing-key-123 and task-key-abcdef at redis://:hunter22@db:6379/0 in "
            "/usr/lib/python3.11/site-packages/torch/nn/functional.py and "
            f"{failure_text.ROOT}/evaluators/training.py; abc stays")
    clean = redact(text, environ)
    assert "django-signing-key" not in clean and "task-key-abcdef" not in clean and "hunter22" not in clean
    assert "redis://[redacted]@db:6379/0" in clean
    assert " functional.py " in clean and "/usr/lib" not in clean
    assert " evaluators/training.py;" in clean
    assert "abc stays" in clean  # too short to be treated as a secret
    assert "/usr/lib/python3.11" in redact(text, environ, paths=False)  # a message's own paths stay


def test_parse_reads_back_new_messages_and_old_python_tracebacks():
    try:
        _raise_deep(1)
    except ValueError as error:
        new = parse(describe(error), environ={})
    assert (new.kind, new.text) == ("ValueError", "bad shape (3, 4)")
    assert new.traceback and new.traceback[-1].strip().startswith("tests/evaluators/test_failure_text.py:")
    old = ("RuntimeError: CUDA error\nTraceback (most recent call last):\n  File \"/opt/venv/lib/torch/x.py\", "
           "line 3, in f\n    g()\nRuntimeError: CUDA error\n")
    parsed = parse(old, environ={})
    assert parsed.kind == "RuntimeError" and parsed.text == "CUDA error"
    assert any('File "x.py"' in line for line in parsed.traceback) and not any("/opt" in l for l in parsed.traceback)
    plain = parse("the worker died during each of 3 attempts", environ={})
    assert (plain.kind, plain.text, plain.traceback) == ("", "the worker died during each of 3 attempts", [])


def test_secrets_given_explicitly_are_removed_too():
    assert redact("key=abcdefgh1234", environ={}, extra=("abcdefgh1234",)) == "key=[redacted]"
    assert failure_text.short_path("/elsewhere/lib/mod.py") == "mod.py"
    assert failure_text.short_path(str(failure_text.ROOT / "nas" / "packet.py")) == "nas/packet.py"
    assert Path(failure_text.__file__).parent.name == "evaluators"
