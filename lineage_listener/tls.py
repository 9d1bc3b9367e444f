"""TLS for the clients that send lineage (to a lineage server, an OpenLineage endpoint): the
server's certificate is always checked, against the system's CAs or a CA file (PEM) of a private
CA (``spark.lineage.tls.ca``, ``--tls-ca``); there is no switch to turn the check off. A failed
check is one line naming why (:func:`failure`), never a traceback.

>>> import ssl
>>> context(None).verify_mode == ssl.CERT_REQUIRED and context(None).check_hostname
True
>>> failure(ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"))
'certificate not trusted: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed'
>>> failure(ConnectionRefusedError(111, "Connection refused")) is None
True
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - ssl is imported when a client first needs it (0.1 s)
    import ssl

#: The conf key (and the bridge worker's environment variable) naming a CA file.
CONF = "spark.lineage.tls.ca"
ENV = "LINEAGE_TLS_CA"


def context(ca: str | None = None) -> ssl.SSLContext:
    """A client context that checks the server's certificate and host name: against ``ca`` (a PEM
    file of one or more CA certificates: those alone are trusted) or else the system's CAs.
    Raises OSError (``ssl.SSLError`` or ``FileNotFoundError``) when ``ca`` cannot be read."""
    import ssl

    return ssl.create_default_context(cafile=ca) if ca else ssl.create_default_context()


def failure(exc: BaseException) -> str | None:
    """One line when ``exc`` (or what it wraps: urllib's ``reason``, requests' chain) is a failed
    TLS handshake; None for any other error."""
    ssl = sys.modules.get("ssl")
    if ssl is None:  # nothing made a TLS connection in this process
        return None
    seen: set[int] = set()
    todo: list[Any] = [exc]
    while todo:
        e = todo.pop()
        if not isinstance(e, BaseException) or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, ssl.SSLCertVerificationError):
            why = getattr(e, "verify_message", None)
            return f"certificate not trusted: {(why or _first_line(e)).rstrip('.')}"
        if isinstance(e, ssl.SSLError):
            return f"TLS handshake failed: {_first_line(e)}"
        todo += [getattr(e, "reason", None), e.__cause__, e.__context__, *e.args]
    return None


def _first_line(e: BaseException) -> str:
    text = str(e.args[1] if len(e.args) > 1 and isinstance(e.args[1], str) else e)
    return (text.strip().splitlines() or [type(e).__name__])[0][:300]
