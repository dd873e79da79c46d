"""Settings split by environment: ``base`` (shared), ``local`` (the run command), ``test``, ``production``."""
