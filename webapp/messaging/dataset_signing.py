"""The signature on a worker's request for a registered data set's archive (``webapp.services.dataset_fetch``
answers it, ``webapp.worker.data_fetch`` sends it): signed as the evaluation messages are
(``webapp.messaging.signing``: HMAC-SHA256 under ``NAS_TASK_KEY``, which every host of one installation shares).
A worker holds no user account; the key is what proves it belongs to the installation, and a signature names one
digest and an expiry, so it fetches that set only, for a few minutes."""
from __future__ import annotations

import time
from typing import Any

from webapp.messaging import signing

#: How long a signed fetch request stays valid, in seconds.
VALID_SECONDS = 600
EXPIRES, SIGNATURE = "X-NAS-Expires", "X-NAS-Signature"


def signed_headers(digest: str, now: float | None = None) -> dict[str, str]:
    """The headers a worker sends to fetch the set ``digest``."""
    expires = int((now or time.time()) + VALID_SECONDS)
    return {EXPIRES: str(expires), SIGNATURE: signing.sign({"dataset_archive": digest, "expires": expires})}


def check_signature(digest: str, expires: Any, signature: Any) -> None:
    """:class:`signing.MalformedPacket` unless the request was signed for ``digest`` and has not expired."""
    try:
        expires = int(expires)
    except (TypeError, ValueError):
        raise signing.MalformedPacket(f"the {EXPIRES} header must be a time in seconds") from None
    if expires < time.time():
        raise signing.MalformedPacket("the signed request has expired")
    signing.verify({"dataset_archive": digest, "expires": expires}, signature, "a data-set fetch")
