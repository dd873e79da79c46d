"""Inference schedules of built networks (seed 002 on PyTorch): the operator graph of a ``Net``
(``program``), the executor that runs a schedule (``executor``), measured stage costs with their cache
(``profile``) and the whole report of one network (``network.schedule_network``)."""
