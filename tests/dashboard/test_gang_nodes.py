"""The nodes page shows the gang a slot of a gang worker holds (``evalworker --gang``)."""
from __future__ import annotations

from webapp.messaging import transport


def test_nodes_page_names_the_devices_of_a_running_gang(owner_client, search):
    info = {"node": "gangnode", "device": "cpux4", "slot": 0, "slots": 4, "pool": "eval", "name": "gangnode/cpux4/0",
            "host": "gangnode", "pid": 1, "current": {"search": search.pk, "individual": 1, "number": 0,
                                                      "devices": "cpu,cpu", "gang": 2}}
    transport.announce_slot("gangnode", "cpux4", 0, info)
    page = owner_client.get("/nodes/").content.decode()
    assert "cpux4" in page and "on a gang of 2: cpu,cpu" in page
