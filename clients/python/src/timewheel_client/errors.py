"""What a call of the client raises.

Why one module: a caller catches by kind (the API said no, the answer was not one the API
gives, the network failed) and switches on the API's stable ``code``, never on a message.
:class:`ApiError` carries the error object of the API (``{"error": {"code", "field",
"message", ...}}``, docs/openapi.yaml ``Error``) as attributes; its subclasses only name the
statuses a caller most often handles apart.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Type


class TimewheelError(Exception):
    """The base of everything the client raises."""


class TransportError(TimewheelError):
    """No answer: the connection failed or timed out. A write may or may not have been done;
    retry it with the same task id (submits with an id are idempotent)."""


class ResponseError(TimewheelError):
    """An answer the API does not give: not JSON, not the expected shape, or larger than the
    client's ``max_response_bytes``. Nothing of it is trusted."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class ApiError(TimewheelError):
    """The API answered with an error object.

    ``status`` is the HTTP status, ``code`` the API's stable snake_case word, ``field`` the
    dotted path of the culprit (or None), ``message`` for people, ``state`` the task's state
    on a ``conflict``, ``index`` an item's place in a batch, ``retry_after`` the seconds of
    ``Retry-After`` (429 and 503), ``error`` the whole error object as received.
    """

    def __init__(self, status: int, error: Mapping[str, Any], retry_after: Optional[float] = None) -> None:
        self.status = status
        self.error: Dict[str, Any] = dict(error)
        self.code: str = str(error.get("code", ""))
        field = error.get("field")
        self.field: Optional[str] = field if isinstance(field, str) else None
        self.message: str = str(error.get("message", ""))
        state = error.get("state")
        self.state: Optional[str] = state if isinstance(state, str) else None
        index = error.get("index")
        self.index: Optional[int] = index if isinstance(index, int) else None
        self.retry_after = retry_after
        where = f" ({self.field})" if self.field else ""
        super().__init__(f"{status} {self.code}{where}: {self.message}")


class BadRequestError(ApiError):
    """400: bad input, nothing stored; ``field`` names the culprit."""


class AuthError(ApiError):
    """401 (no or bad token) or 403 (``forbidden_origin``, or ``insufficient_scope``: a read token)."""


class NotFoundError(ApiError):
    """404: no such task, dead letter or schedule (also what the token may not see)."""


class ConflictError(ApiError):
    """409: the item is in the wrong state (``too_late``, ``wrong_state``, ``conflict`` with
    ``state``, ``wrong_attempt``, ``schedule_conflict``)."""


class RetryLaterError(ApiError):
    """429 (the service sheds load) or 503 (store unavailable): wait ``retry_after`` seconds
    and retry, with the same id for a write."""


_BY_STATUS: Dict[int, Type[ApiError]] = {
    400: BadRequestError,
    401: AuthError,
    403: AuthError,
    404: NotFoundError,
    409: ConflictError,
    429: RetryLaterError,
    503: RetryLaterError,
}


def api_error(status: int, error: Mapping[str, Any], retry_after: Optional[float] = None) -> ApiError:
    """The exception of the class that fits ``status``."""
    return _BY_STATUS.get(status, ApiError)(status, error, retry_after)
