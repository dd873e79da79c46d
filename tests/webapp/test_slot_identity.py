"""A slot's announcement never fails because torch is half imported by another thread."""
import sys
import types

from webapp.worker import slots


def test_threads_are_unknown_while_torch_is_still_being_imported(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))  # what another thread's import leaves early
    assert slots.identity().as_dict()["threads"] is None


def test_threads_are_reported_once_torch_is_loaded(monkeypatch):
    fake = types.ModuleType("torch")
    fake.get_num_threads = lambda: 3
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert slots.identity().as_dict()["threads"] == 3


def test_threads_are_unknown_in_a_process_without_torch(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert slots.torch_threads() is None
