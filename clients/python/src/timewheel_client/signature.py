"""Verifying ``Timewheel-Signature`` v2 in a receiver of timewheeld's callbacks.

Why it takes what it takes: the signature (docs/server.md, "The signature") is an
HMAC-SHA256 of six lines: ``t``, the method, the callback URL **exactly as given at submit**,
the ``Idempotency-Key`` and ``Timewheel-Attempt`` headers, and the **raw body bytes**. So the
receiver passes the bytes it read from the socket, before any framework parses them: a body
parsed and serialized again differs by a space or a key order and never verifies (the most
common way webhook verification breaks). Parse the body only after :meth:`Verifier.verify`
returned. The URL is the one the receiver registered, not one rebuilt from the request (a
proxy changes the host, scheme or port on the way).

Several secrets are accepted at once (rotation: the service sends one ``v2`` per secret of
its own, and a receiver may hold the new and the old one); ``t`` must be within
``tolerance_s`` of the receiver's clock (300 s by default; an older ``t`` is a replay); every
comparison is :func:`hmac.compare_digest`, in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Any, Callable, Iterable, List, Mapping, Optional, Sequence, Tuple, Union, cast

Secret = Union[str, bytes]

SIGNATURE_HEADER = "Timewheel-Signature"
IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"
ATTEMPT_HEADER = "Timewheel-Attempt"


class SignatureError(Exception):
    """The request is not a callback signed by a secret of this receiver. ``reason`` is one of
    ``missing`` (a header is absent), ``malformed`` (a header does not parse), ``expired``
    (``t`` outside the tolerance) or ``mismatch`` (no ``v2`` entry matches any secret)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason


def canonical_text(t: str, method: str, url: str, idempotency_key: str, attempt: str, body: bytes) -> bytes:
    """The bytes the service signs: six lines joined by ``\\n``, none after the body."""
    return "\n".join([t, method, url, idempotency_key, attempt]).encode() + b"\n" + body


def _parse(header: str) -> Tuple[str, List[str]]:
    t: Optional[str] = None
    v2: List[str] = []
    for part in header.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep:
            raise SignatureError("malformed", f"{SIGNATURE_HEADER} entry without '=': {part[:40]!r}")
        if key == "t":
            if t is not None or not value.isascii() or not value.isdigit() or len(value) > 12:
                raise SignatureError("malformed", f"{SIGNATURE_HEADER} has a bad or second t")
            t = value
        elif key == "v2":
            v2.append(value)
        # v1 and entries of later versions are ignored: v1 signs the body alone
    if t is None:
        raise SignatureError("malformed", f"{SIGNATURE_HEADER} has no t")
    if not v2:
        raise SignatureError("malformed", f"{SIGNATURE_HEADER} has no v2 entry")
    return t, v2


def _header(headers: Any, name: str) -> Optional[str]:
    """A header of a case-insensitive mapping (http.server's ``self.headers``), or of a plain
    dict in any case."""
    value: object = headers.get(name)
    if value is None and isinstance(headers, Mapping):
        lower = name.lower()
        items = cast(Mapping[object, object], headers).items()
        value = next((v for k, v in items if isinstance(k, str) and k.lower() == lower), None)
    return value if isinstance(value, str) else None


class Verifier:
    """Checks callbacks against the receiver's secrets.

    >>> verifier = Verifier(["new-secret", "old-secret"])
    >>> verifier.verify("POST", "https://billing.example/hooks/remind", self.headers, raw_body)

    ``clock`` returns the time in Unix seconds (``time.time`` by default; a test passes its
    own).
    """

    def __init__(self, secrets: Union[Secret, Iterable[Secret]], *, tolerance_s: float = 300,
                 clock: Callable[[], float] = time.time) -> None:
        if isinstance(secrets, (str, bytes)):
            secrets = [secrets]
        self._secrets: Sequence[bytes] = [s.encode() if isinstance(s, str) else bytes(s) for s in secrets]
        if not self._secrets or not all(self._secrets):
            raise ValueError("at least one secret, none empty")
        self._tolerance = tolerance_s
        self._clock = clock

    def verify(self, method: str, url: str, headers: Any, body: bytes) -> None:
        """Returns when the request is signed, raises :class:`SignatureError` otherwise.

        ``headers`` is anything with a ``get`` (http.server's ``self.headers``, a dict in any
        case; for WSGI, :func:`wsgi_headers`); ``body`` the raw bytes as received."""
        values: List[str] = []
        for name in (SIGNATURE_HEADER, IDEMPOTENCY_KEY_HEADER, ATTEMPT_HEADER):
            value = _header(headers, name)
            if value is None:
                raise SignatureError("missing", f"no {name} header")
            values.append(value)
        signature, key, attempt = values
        self.verify_parts(method, url, signature=signature, idempotency_key=key,
                          attempt=attempt, body=body)

    def verify_parts(self, method: str, url: str, *, signature: str, idempotency_key: str,
                     attempt: str, body: bytes) -> None:
        """:meth:`verify` with the three headers given one by one."""
        if not isinstance(cast(object, body), (bytes, bytearray, memoryview)):  # untyped callers
            raise TypeError("body must be the raw bytes as received, not a parsed or decoded body")
        t, entries = _parse(signature)
        if abs(self._clock() - int(t)) > self._tolerance:
            raise SignatureError("expired", f"t={t} is more than {self._tolerance} s from this receiver's clock")
        text = canonical_text(t, method, url, idempotency_key, attempt, bytes(body))
        matched = False
        for secret in self._secrets:  # no early exit: the time does not tell which secret matched
            expected = hmac.new(secret, text, hashlib.sha256).hexdigest().encode()
            for entry in entries:
                matched |= hmac.compare_digest(expected, entry.encode("ascii", "replace"))
        if not matched:
            raise SignatureError("mismatch", "no v2 entry matches a secret of this receiver")


def wsgi_headers(environ: Mapping[str, Any]) -> Mapping[str, str]:
    """The request headers of a WSGI ``environ`` (``HTTP_TIMEWHEEL_SIGNATURE`` and so on), by
    their HTTP names, for :meth:`Verifier.verify`."""
    return {k[5:].replace("_", "-"): v for k, v in environ.items()
            if k.startswith("HTTP_") and isinstance(v, str)}
