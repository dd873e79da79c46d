"""What the control loop and the evaluation workers share: the Redis keys between them (``transport``), the
messages workers send (``messages``), the signed packets the loop sends (``signing``) and the tasks by name
(``dispatch``). No database access here: evaluation workers import it on hosts without one."""
