"""Keep secrets out of the store: redact option values and URL credentials.

>>> redact_options({"path": "/x", "password": "p", "fs.s3a.secret.key": "s"})
{'path': '/x', 'password': '***', 'fs.s3a.secret.key': '***'}
>>> redact_url("jdbc:postgresql://bob:pw@db:5432/shop?user=bob&password=pw")
'jdbc:postgresql://db:5432/shop?user=bob&password=***'
"""
from __future__ import annotations

import re
from collections.abc import Mapping

SECRET_KEY = re.compile(r"pass(word)?|pwd|secret|token|key|credential|auth", re.IGNORECASE)
REDACTED = "***"
_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][\w+.\-:]*://)(?P<userinfo>[^/@\s]+@)")
_PARAM = re.compile(r"(?P<sep>[?&;])(?P<key>[^=&;?\s]+)=(?P<value>[^&;\s]*)")


def is_secret_key(key: str) -> bool:
    """True when an option key looks like it holds a secret."""
    return bool(SECRET_KEY.search(key))


def redact_url(url: str) -> str:
    """Drop ``user:password@`` and redact secret-looking query/``;`` parameters."""
    url = _USERINFO.sub(lambda m: m.group("scheme"), url)
    return _PARAM.sub(
        lambda m: f"{m.group('sep')}{m.group('key')}={REDACTED if is_secret_key(m.group('key')) else m.group('value')}",
        url,
    )


def redact_options(options: Mapping[str, str]) -> dict[str, str]:
    """Options with secret-looking values replaced and URLs cleaned."""
    out = {}
    for key, value in options.items():
        if is_secret_key(key):
            out[key] = REDACTED
        elif isinstance(value, str) and "://" in value:
            out[key] = redact_url(value)
        else:
            out[key] = value
    return out
