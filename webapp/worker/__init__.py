"""The evaluation worker's process (``manage.py evalworker``): it evaluates the packets it pulls and reports to
each search's loop through Redis. It never touches the database, so it runs on any host that reaches Redis.

- ``tasks``: the Celery edge (``evaluate_batch``, each pool process a slot);
- ``runner``: one packet, individual by individual (skip, count the attempt, evaluate, push the result);
- ``artifacts``: the weights and exports a trained individual leaves for the loop;
- ``heartbeat``: an evaluation's heartbeat; ``slots``: who this slot is, and its own heartbeat.
"""
