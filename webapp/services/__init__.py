"""What a user does and sees, for the web process and the ``search`` command (never the workers): create, edit,
launch, stop, resume and clone searches (``lifecycle``), read them (``queries``, ``nodes``, ``estimates``), and
download them (``exports``: stored bytes only, no torch); ``progress`` is ``search watch``'s line."""
