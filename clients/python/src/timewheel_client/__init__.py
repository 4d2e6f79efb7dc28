"""timewheel_client: a client of the timewheeld HTTP API and a receiver helper.

Why two parts in one package: who submits tasks usually also receives their callbacks.
:class:`Client` (client.py) speaks the API of docs/openapi.yaml; :class:`Verifier`
(signature.py) checks ``Timewheel-Signature`` v2 on the raw body of a callback; errors.py
holds what both raise.
"""

from .client import BatchResult, Client, JsonObject, Page, Time
from .errors import (ApiError, AuthError, BadRequestError, ConflictError, NotFoundError,
                     ResponseError, RetryLaterError, TimewheelError, TransportError)
from .signature import SignatureError, Verifier, canonical_text, wsgi_headers

__all__ = [
    "ApiError", "AuthError", "BadRequestError", "BatchResult", "Client", "ConflictError",
    "JsonObject", "NotFoundError", "Page", "ResponseError", "RetryLaterError", "SignatureError",
    "Time", "TimewheelError", "TransportError", "Verifier", "canonical_text", "wsgi_headers",
]
