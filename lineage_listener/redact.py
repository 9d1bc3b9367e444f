"""Keep secrets out of the store, the spool and the logs: the one place that redacts.

Three kinds of secret are recognised, in names and in free text alike:

- the user-info of any URI (``scheme://user:password@host/...``, ``file://bob:PW@host/x``);
- the value of a secret-looking key (``password``, ``pwd``, ``sas``, ``sig``, ``token``,
  ``secret``, ``credential``, ``connectionString``, ``*.key``, ``fs.azure.account.key.*``,
  ``AccountKey``, ``SharedAccessSignature``...) written ``key=value`` (URL parameters,
  connection strings), ``key -> value`` (Scala maps in error text) or ``"key": "value"``;
- option values under such keys (:func:`redact_options`).

Dataset names and locations drop the user-info (:func:`redact_url`: one dataset
whatever the credentials); free text keeps a visible ``***@`` (:func:`redact_text`).
Every row goes through :func:`redact_row` when it is added to a batch, so nothing
reaches the store or the spool unredacted; loggers made by :func:`logger` redact
their messages.

>>> redact_options({"path": "/x", "password": "p", "fs.s3a.secret.key": "s"})
{'path': '/x', 'password': '***', 'fs.s3a.secret.key': '***'}
>>> redact_url("jdbc:postgresql://bob:pw@db:5432/shop?user=bob&password=pw")
'jdbc:postgresql://db:5432/shop?user=bob&password=***'
>>> redact_text("Wrong FS: file://bob:PW@localhost/tmp/x, expected: file:///")
'Wrong FS: file://***@localhost/tmp/x, expected: file:///'
>>> redact_text("Server=db1;User Id=u;Password=hunter2;")
'Server=db1;User Id=u;Password=***;'

Azure storage URIs name their container where other URIs put a user
(``abfss://container@account.dfs.core.windows.net/path``): kept, as nothing there is secret;
a ``user:password@`` in them is still dropped.

>>> redact_url("abfss://raw@acct.dfs.core.windows.net/orders")
'abfss://raw@acct.dfs.core.windows.net/orders'
>>> redact_url("wasbs://raw:key@acct.blob.core.windows.net/orders")
'wasbs://acct.blob.core.windows.net/orders'
"""
from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "***"

#: Substrings of a key (lower case, letters and digits only) that mark it secret.
_SECRET_PARTS = ("password", "passwd", "pwd", "secret", "token", "credential", "connectionstring",
                 "accountkey", "sharedaccess", "signature", "apikey", "privatekey", "auth")
#: Whole words of a key (split at punctuation and camelCase) that mark it secret.
_SECRET_WORDS = frozenset({"key", "sas", "sig", "pass", "pw", "pat", "jwt", "bearer"})
_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")

_SCHEME = r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.\-]*://)"
#: Everything up to the authority's last ``@``; else ``user:password@`` where the password
#: holds a ``/`` (an AWS secret key), unless what follows the ``:`` is a port.
_USERINFO = re.compile(
    _SCHEME + r"(?P<userinfo>[^\s/?#\"'<>]*@|[^\s/?#@:\"'<>]*:(?!\d*[/?#\s\"'<>]|\d*$)[^\s@\"'<>]*?@)")
#: ``key=value``, ``key -> value``, ``"key": "value"``, ``key 'value'`` (SQL OPTIONS) where the
#: key holds a trigger word; :func:`is_secret_key` has the last word (``monkey=`` is not a key).
_TRIGGERS = _SECRET_PARTS + tuple(sorted(_SECRET_WORDS))
_TRIGGER = "|".join(_TRIGGERS)
_QUOTED = r"\"(?:[^\"\\]|\\.)*\"|'[^']*'"
_KEY_VALUE = re.compile(
    rf"(?P<key>\b[\w.\-]*(?i:{_TRIGGER})[\w.\-]*)"
    rf"(?:(?P<sep>=|\s*->\s*)(?P<value>{_QUOTED}|[^\s;&?,)\"'}}\]]+)"
    rf"|(?P<qsep>[\"']?\s*[:=]?\s*)(?P<qvalue>{_QUOTED}))")


def is_secret_key(key: str) -> bool:
    """True when an option or parameter key looks like it holds a secret.

    >>> [k for k in ("password", "sas", "fs.azure.account.key.acct.dfs.core.windows.net", "sfToken",
    ...              "connectionString", "Pwd", "header", "path", "dbtable", "sep") if is_secret_key(k)]
    ['password', 'sas', 'fs.azure.account.key.acct.dfs.core.windows.net', 'sfToken', 'connectionString', 'Pwd']
    """
    flat = re.sub(r"[^a-z0-9]", "", key.lower())
    if any(part in flat for part in _SECRET_PARTS):
        return True
    return any(w.lower() in _SECRET_WORDS for w in _WORDS.findall(key))


def _value(m: re.Match[str]) -> str:
    if not is_secret_key(m.group("key")):
        return m.group(0)
    bare = m.group("sep") is not None
    sep, value = (m.group("sep"), m.group("value")) if bare else (m.group("qsep"), m.group("qvalue"))
    quote = value[0] if value[:1] in ("'", '"') else ""
    return f"{m.group('key')}{sep}{quote}{REDACTED}{quote}"


def _secret_values(text: str) -> str:
    if "=" in text or "->" in text or '"' in text or "'" in text:
        low = text.lower()
        if any(word in low for word in _TRIGGERS):  # cheap test first: most text holds none
            return _KEY_VALUE.sub(_value, text)
    return text


#: Schemes whose ``name@host`` part is a storage container, not a user (Azure Data Lake, Blob).
_CONTAINER_SCHEMES = frozenset({"abfs://", "abfss://", "wasb://", "wasbs://"})


def _is_container(m: re.Match[str]) -> bool:
    return m.group("scheme").lower() in _CONTAINER_SCHEMES and ":" not in m.group("userinfo")


def redact_url(url: str) -> str:
    """A name or location: drop ``user:password@``, redact secret-looking parameters."""
    if "@" in url:
        url = _USERINFO.sub(lambda m: m.group(0) if _is_container(m) else m.group("scheme"), url)
    return _secret_values(url)


def redact_text(text: str) -> str:
    """Free text (errors, SQL, log lines): user-info becomes ``***@``, secret values ``***``."""
    if "@" in text:
        text = _USERINFO.sub(
            lambda m: m.group(0) if _is_container(m) else m.group("scheme") + REDACTED + "@", text)
    return _secret_values(text)


def redact_options(options: Mapping[str, str]) -> dict[str, str]:
    """Options with secret-looking values replaced and URLs cleaned."""
    out = {}
    for key, value in options.items():
        if is_secret_key(key):
            out[key] = REDACTED
        elif isinstance(value, str):
            out[key] = redact_url(value) if "://" in value else redact_text(value)
        else:
            out[key] = value
    return out


#: Fields up to this long are redacted once per distinct text (:func:`redact_row`).
_SHORT_FIELD = 4096
#: Their answers: at most this many, then forgotten all at once (a plain dict: a row's lookup is
#: one ``dict.get`` per text, which ``functools.lru_cache`` more than doubles).
_KNOWN_MAX = 1024
_known: dict[str, str] = {}


def _redact_new(text: str) -> str:
    """:func:`redact_text` of a field not met recently (remembered when short)."""
    if len(text) > _SHORT_FIELD:
        return redact_text(text)
    if len(_known) >= _KNOWN_MAX:
        _known.clear()
    found = _known[text] = redact_text(text)
    return found


def changed_texts(texts: Iterable[str]) -> dict[str, str]:
    """The texts among ``texts`` that :func:`redact_text` changes, each with what it becomes: a
    batch of rows is redacted once per distinct text, and a row rebuilt only when one of its texts
    changes (:meth:`~lineage_listener.store.batch.Batch.add_all`).

    >>> changed_texts(["q1", "password=hunter2", "q1"])
    {'password=hunter2': 'password=***'}
    """
    known = _known.get
    out = {}
    for v in texts:
        r = known(v)
        if r is None:
            r = _redact_new(v)
        if r != v:
            out[v] = r
    return out


def redact_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """Every text field of a store row through :func:`redact_text` (the batch boundary).

    A query's rows repeat their texts (its id, run, datasets, a filter's expression on every
    edge it governs): a text is redacted once and its answer remembered (at most 1,024 texts of
    at most 4,096 characters, in this process's memory only).

    >>> redact_row(("q1", "jdbc:mysql://u:pw@db/x", 3, "password=hunter2"))
    ('q1', 'jdbc:mysql://***@db/x', 3, 'password=***')
    """
    known = _known.get
    return tuple([(r if (r := known(v)) is not None else _redact_new(v)) if isinstance(v, str) else v for v in row])


class _Redacting(logging.Filter):
    """Formats a record's message once and redacts it (arguments may carry paths, errors)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string is logging's problem, not ours
            return True
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text)
        # The raw exception stays behind: formatters that read exc_info themselves (PySpark's JSON
        # formatter) would print its unredacted message; every standard formatter prints exc_text.
        record.exc_info = None
        record.msg, record.args = redact_text(message), None
        return True


_FILTER = _Redacting()


def logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)`` whose records are redacted before any handler sees them.

    PySpark's ``PySparkLogger.getLogger`` swaps the global logger class for a moment, unsynchronized:
    a logger created on another thread just then is one of PySpark's, with a JSON handler of its own.
    Ours stay plain loggers that propagate to the application's handlers.
    """
    log = logging.getLogger(name)
    if type(log) is not logging.Logger and type(log).__module__.startswith("pyspark."):
        for handler in list(log.handlers):
            log.removeHandler(handler)
        log.__class__ = logging.Logger
        log.setLevel(logging.NOTSET)
    if _FILTER not in log.filters:
        log.addFilter(_FILTER)
    return log
