"""The control worker's process (``manage.py controlworker``): each search's evolutionary loop, and the reaper.

- ``tasks``: the Celery edge (``run_search``: take the lease, run the loop);
- ``loop``: one search's loop: ask the strategy, create, send, collect, tell (it only orchestrates);
- ``recording``: every write of a search and its individuals, each fenced by the lease;
- ``strategy_store``: the strategy's state in the database; ``kept``: the files of the best individuals;
- ``final``: the final training (``final``): the top genomes retrained as final runs once the search ends;
- ``lease``: who runs a search; ``reaper``: restarts a loop whose worker died, and keeps the worker registry
  (``registry``); ``faults``: points where a test can make the loop stall.
"""
