"""The seed-000 packet: strict JSON round trips, sizes, the adaptive ind_len rule and the message-length model."""
from __future__ import annotations

import dataclasses
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nas.packet import (
    REQUEST,
    RESULTS,
    Packet,
    adaptive_ind_len,
    split_packets,
)

PELEE = {"stages": [[2, 3, 32], [2, 4, 32], [2, 8, 32], [2, 6, 32]]}


def individual(i: int) -> dict:
    return {"id": i, "space": "pelee", "genome": PELEE, "budget": {"epochs": 2}}


@pytest.mark.parametrize(
    "packet",
    [Packet(REQUEST, 0, []), Packet(RESULTS, 2, [individual(1), individual(2)]), Packet(RESULTS, 0, [], True),
     Packet(REQUEST, 1, [{"genome": "ünïcode"}], False)],
)
def test_round_trip(packet):
    assert Packet.from_dict(json.loads(packet.to_json())) == packet
    assert Packet.from_dict(json.loads(packet.to_json().encode())) == packet


def test_fields_follow_table_2():
    assert [f.name for f in dataclasses.fields(Packet)] == ["operation_type", "ind_len", "ind_set", "termination_flag"]
    assert list(json.loads(Packet(REQUEST, 0, []).to_json())) == ["operation_type", "ind_len", "ind_set", "termination_flag"]
    assert (REQUEST, RESULTS) == (0, 1)


def test_nbytes_is_the_utf8_length():
    packet = Packet(RESULTS, 1, [{"name": "ünïcode"}])
    assert packet.nbytes() == len(packet.to_json().encode("utf-8"))
    assert packet.to_json().isascii()  # non-ASCII text is escaped, so any transport carries it


@pytest.mark.parametrize(
    "data, needle",
    [
        ({"operation_type": 2, "ind_len": 0, "ind_set": [], "termination_flag": False}, "`operation_type` must be 0"),
        ({"operation_type": True, "ind_len": 0, "ind_set": [], "termination_flag": False}, "operation_type=True"),
        ({"operation_type": 1, "ind_len": 2, "ind_set": [{}], "termination_flag": False}, "ind_len=2, len(ind_set)=1"),
        ({"operation_type": 1, "ind_len": "1", "ind_set": [{}], "termination_flag": False}, "ind_len='1'"),
        ({"operation_type": 1, "ind_len": 1, "ind_set": [3], "termination_flag": False}, "`ind_set` must be a list"),
        ({"operation_type": 1, "ind_len": 0, "ind_set": {}, "termination_flag": False}, "`ind_set` must be a list"),
        ({"operation_type": 0, "ind_len": 0, "ind_set": [], "termination_flag": 0}, "termination_flag=0"),
        ({"operation_type": 0, "ind_len": 0, "ind_set": []}, "missing=['termination_flag']"),
        ({"operation_type": 0, "ind_len": 0, "ind_set": [], "termination_flag": False, "x": 1}, "unknown=['x']"),
        ([0, 0, [], False], "must be a JSON object"),
    ],
)
def test_from_dict_is_strict(data, needle):
    with pytest.raises(ValueError) as info:
        Packet.from_dict(json.loads(json.dumps(data)))
    assert needle in str(info.value)


def test_from_dict_rejects_what_is_not_an_object():
    with pytest.raises(ValueError, match="A packet must be a JSON object"):
        Packet.from_dict(["not", "a", "packet"])


def test_packet_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Packet(REQUEST, 0, []).ind_len = 3


def test_adaptive_ind_len_decays_from_3_to_1_for_the_paper_setting():
    sizes = [adaptive_ind_len(20, 4, k) for k in range(6)]
    assert sizes == [3, 2, 1, 1, 1, 1]


@pytest.mark.parametrize("pop_size, n_nodes", [(20, 4), (20, 1), (5, 4), (4, 4), (0, 3), (100, 7)])
def test_adaptive_ind_len_stays_in_range(pop_size, n_nodes):
    cap = math.ceil(pop_size / n_nodes)
    sizes = [adaptive_ind_len(pop_size, n_nodes, k, start=s) for k in range(10) for s in (1, 3, 10)]
    assert all(0 <= size <= cap for size in sizes)
    assert adaptive_ind_len(pop_size, n_nodes, 50) == min(1, cap)


def test_adaptive_ind_len_caps_by_what_is_available():
    assert adaptive_ind_len(20, 4, 0, available=2) == 2
    assert adaptive_ind_len(20, 4, 0, available=0) == 0


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({"pop_size": -1, "n_nodes": 4, "requests_so_far": 0}, "`pop_size` must be an integer >= 0 (pop_size=-1)"),
        ({"pop_size": 20, "n_nodes": 0, "requests_so_far": 0}, "`n_nodes` must be an integer >= 1 (n_nodes=0)"),
        ({"pop_size": 20, "n_nodes": 4, "requests_so_far": -2}, "(requests_so_far=-2)"),
        ({"pop_size": 20, "n_nodes": 4, "requests_so_far": 0, "start": 0}, "(start=0)"),
        ({"pop_size": 20, "n_nodes": 4, "requests_so_far": 0, "available": -1}, "(available=-1)"),
    ],
)
def test_adaptive_ind_len_checks_its_arguments(kwargs, needle):
    with pytest.raises(ValueError) as info:
        adaptive_ind_len(**kwargs)
    assert needle in str(info.value)


def test_split_packets_gives_every_free_slot_work_before_anyone_gets_two():
    sizes = [len(p) for p in split_packets(list(range(17)), free_slots=16, ind_len=2)]
    assert sizes == [2] + [1] * 15
    assert [len(p) for p in split_packets(list(range(10)), free_slots=4, ind_len=3)] == [3, 3, 2, 2]
    assert [len(p) for p in split_packets(list(range(10)), free_slots=2, ind_len=3)] == [3, 3, 2, 2]
    assert split_packets([], free_slots=3, ind_len=2) == []
    assert [x for p in split_packets(list(range(23)), 5, 4) for x in p] == list(range(23))
    with pytest.raises(ValueError, match="free_slots"):
        split_packets([1], free_slots=0, ind_len=1)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 200), st.integers(1, 64), st.integers(1, 8))
def test_split_packets_properties(count, slots, ind_len):
    packets = split_packets(list(range(count)), slots, ind_len)
    assert [x for p in packets for x in p] == list(range(count))
    assert all(1 <= len(p) <= ind_len for p in packets)
    assert len(packets) >= min(count, slots)
    if packets:
        assert max(map(len, packets)) - min(map(len, packets)) <= 1
