"""The client of the timewheeld API (docs/openapi.yaml is the contract, docs/server.md the prose).

Why it is written this way: one method per operation of the document, taking its fields as
keyword arguments and returning the JSON object the API answers (tasks, pages, stats) as
plain dicts, so that a field the service adds later reaches the caller without a release of
the client. Every byte from the network is untrusted: an answer is read up to
``max_response_bytes`` and within ``timeout`` seconds, must be a JSON object, and anything
else raises :class:`ResponseError`. Errors of the API raise :class:`ApiError` (errors.py).
One connection per request (http.client): no pool to leak, nothing shared between threads.
"""

from __future__ import annotations

import datetime
import http.client
import json
import ssl
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple, Union, cast

from .errors import ApiError, ResponseError, TransportError, api_error

JsonObject = Dict[str, Any]
Time = Union[str, datetime.datetime]
"""RFC 3339 text, or an aware datetime (sent in UTC with milliseconds)."""

DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024
"""A page of 1000 entries or a task with a 1 MiB body and its log fit well within it."""


@dataclass(frozen=True)
class Page:
    """One page of a list: ``entries`` and the cursor of the next page (None on the last)."""

    entries: List[JsonObject]
    next_cursor: Optional[str]


@dataclass(frozen=True)
class BatchResult:
    """One item of a batch submit, in order: ``status`` 201 or 200 with ``task``, or an error
    status with ``error`` (an :class:`ApiError` whose ``index`` is the item's place)."""

    status: int
    task: Optional[JsonObject] = None
    error: Optional[ApiError] = None


def _time(value: Time) -> str:
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            raise ValueError("a naive datetime has no offset: give an aware one (tzinfo=timezone.utc)")
        utc = value.astimezone(datetime.timezone.utc)
        return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
    return value


def _due(due_at: Optional[Time], delay_ms: Optional[int], required: bool) -> JsonObject:
    if due_at is not None and delay_ms is not None:
        raise ValueError("give due_at or delay_ms, not both")
    if due_at is not None:
        return {"due_at": _time(due_at)}
    if delay_ms is not None:
        return {"delay_ms": delay_ms}
    if required:
        raise ValueError("give due_at or delay_ms")
    return {}


def _json_object(value: Any) -> Optional[JsonObject]:
    """``value`` when it is a JSON object (keys are always strings in JSON), else None."""
    return cast(JsonObject, value) if isinstance(value, dict) else None


def _json_list(value: Any) -> Optional[List[Any]]:
    return cast(List[Any], value) if isinstance(value, list) else None


def _id(value: str) -> str:
    return urllib.parse.quote(value, safe="")


def _retry_after(value: Optional[str]) -> Optional[float]:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None  # an HTTP date: the service sends seconds; a stranger's value is ignored


class Client:
    """A client of one timewheeld.

    >>> c = Client("http://127.0.0.1:8080", token="...")
    >>> c.submit({"url": "https://billing.example/hook", "body": '{"invoice": 42}'},
    ...          id="invoice-42", delay_ms=30000)["state"]
    'delayed'

    ``timeout`` (seconds) bounds the connect, each wait for bytes, and the reading of the
    body as a whole (a server dripping its body cannot hold the call longer);
    ``max_response_bytes`` the size of an answer; ``ssl_context`` the TLS settings of an
    https base URL (the system's trust store by default).
    """

    def __init__(self, base_url: str, token: Optional[str] = None, *, timeout: float = 30.0,
                 max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
                 ssl_context: Optional[ssl.SSLContext] = None) -> None:
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be http://host[:port] or https://...: {base_url!r}")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._token = token
        self._timeout = timeout
        self._max = max_response_bytes
        self._ssl = ssl_context

    # ---- tasks -------------------------------------------------------------------------

    def submit(self, callback: Mapping[str, Any], *, id: Optional[str] = None,
               due_at: Optional[Time] = None, delay_ms: Optional[int] = None,
               retry: Optional[Mapping[str, int]] = None, on_conflict: Optional[str] = None,
               max_delay_ms: Optional[int] = None, queue: Optional[str] = None) -> JsonObject:
        """``POST /v1/tasks``: the task (201 created; 200 when the id exists, with
        ``"replaced"``). ``callback`` is the API's object: ``url``, and optionally ``method``,
        ``headers``, ``secret_headers``, ``body`` (a string), ``timeout_ms``, and the
        completion notices ``on_success`` / ``on_failure`` (``{"url", "headers"}``).
        ``on_conflict`` is ``keep``, ``replace`` or ``debounce`` (with ``max_delay_ms``).
        ``queue`` names an existing queue (``default`` when absent; 400 ``unknown_queue``
        otherwise)."""
        return self._object("POST", "/v1/tasks", self.task_spec(
            callback, id=id, due_at=due_at, delay_ms=delay_ms, retry=retry,
            on_conflict=on_conflict, max_delay_ms=max_delay_ms, queue=queue))

    @staticmethod
    def task_spec(callback: Mapping[str, Any], *, id: Optional[str] = None,
                  due_at: Optional[Time] = None, delay_ms: Optional[int] = None,
                  retry: Optional[Mapping[str, int]] = None, on_conflict: Optional[str] = None,
                  max_delay_ms: Optional[int] = None, queue: Optional[str] = None) -> JsonObject:
        """The body of one submit, as :meth:`submit` sends it and :meth:`submit_batch` takes
        it (the same arguments)."""
        spec: JsonObject = {"callback": dict(callback), **_due(due_at, delay_ms, required=True)}
        for name, value in (("id", id), ("retry", retry), ("on_conflict", on_conflict),
                            ("max_delay_ms", max_delay_ms), ("queue", queue)):
            if value is not None:
                spec[name] = dict(value) if isinstance(value, Mapping) else value
        return spec

    def submit_batch(self, tasks: List[Mapping[str, Any]]) -> List[BatchResult]:
        """``POST /v1/tasks:batch``: 1 to 1000 specs (see :meth:`task_spec`), one result
        each, in order. Items fail on their own (``BatchResult.error``); the call raises only
        when the request as a whole is refused."""
        answer = self._object("POST", "/v1/tasks:batch", {"tasks": [dict(t) for t in tasks]})
        results = _json_list(answer.get("results"))
        if results is None or len(results) != len(tasks):
            raise ResponseError("a batch answer without one result per task", 200)
        out: List[BatchResult] = []
        for result in results:
            item = _json_object(result) or {}
            status = item.get("status")
            if not isinstance(status, int):
                raise ResponseError("a batch result without a status", 200)
            task, error = _json_object(item.get("task")), _json_object(item.get("error"))
            if task is not None:
                out.append(BatchResult(status, task=task))
            elif error is not None:
                out.append(BatchResult(status, error=api_error(status, error)))
            else:
                raise ResponseError("a batch result with neither task nor error", 200)
        return out

    def get(self, task_id: str) -> JsonObject:
        """``GET /v1/tasks/{id}``: the task, its callback (secret header values ``***``)
        and its log."""
        return self._object("GET", f"/v1/tasks/{_id(task_id)}")

    def cancel(self, task_id: str) -> JsonObject:
        """``DELETE /v1/tasks/{id}``: ``{"id", "state": "cancelled"}``; 409 ``too_late``
        once it runs or ended."""
        return self._object("DELETE", f"/v1/tasks/{_id(task_id)}")

    def reschedule(self, task_id: str, *, due_at: Optional[Time] = None,
                   delay_ms: Optional[int] = None) -> JsonObject:
        """``PATCH /v1/tasks/{id}``: the task with its new due time; 409 ``wrong_state``
        unless delayed or prefetched."""
        return self._object("PATCH", f"/v1/tasks/{_id(task_id)}", _due(due_at, delay_ms, required=True))

    def report_result(self, task_id: str, *, attempt: int, outcome: str,
                      error: Optional[str] = None, retry_after_ms: Optional[int] = None) -> JsonObject:
        """``POST /v1/tasks/{id}/result`` for a callback that answered 202: ``outcome`` is
        ``success``, ``retry`` or ``failure``; ``{"accepted": true, ...}`` when the waiting
        attempt took it (409 ``wrong_attempt``, 404 ``no_pending_attempt`` otherwise)."""
        body: JsonObject = {"attempt": attempt, "outcome": outcome}
        if error is not None:
            body["error"] = error
        if retry_after_ms is not None:
            body["retry_after_ms"] = retry_after_ms
        return self._object("POST", f"/v1/tasks/{_id(task_id)}/result", body)

    def list_tasks(self, state: str, *, order: Optional[str] = None,
                   due_after: Optional[Time] = None, due_before: Optional[Time] = None,
                   ended_after: Optional[Time] = None, ended_before: Optional[Time] = None,
                   id_prefix: Optional[str] = None, host: Optional[str] = None,
                   queue: Optional[str] = None, limit: Optional[int] = None,
                   cursor: Optional[str] = None) -> Page:
        """``GET /v1/tasks``: one page of the tasks of ``state``. A page may be short, even
        empty, with a ``next_cursor`` (``host`` filters): :meth:`iter_tasks` walks them all."""
        query = {"state": state, "order": order, "due_after": due_after, "due_before": due_before,
                 "ended_after": ended_after, "ended_before": ended_before, "id_prefix": id_prefix,
                 "host": host, "queue": queue, "limit": limit, "cursor": cursor}
        return self._page("/v1/tasks", query)

    def iter_tasks(self, state: str, **filters: Any) -> Iterator[JsonObject]:
        """Every task :meth:`list_tasks` lists with these filters, page after page."""
        return self._walk(lambda cursor: self.list_tasks(state, cursor=cursor, **filters))

    # ---- dead letters ------------------------------------------------------------------

    def list_dead(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> Page:
        """``GET /v1/dead``: a page of dead letters, oldest death first."""
        return self._page("/v1/dead", {"limit": limit, "cursor": cursor})

    def iter_dead(self, *, limit: Optional[int] = None) -> Iterator[JsonObject]:
        """Every dead letter, page after page."""
        return self._walk(lambda cursor: self.list_dead(limit=limit, cursor=cursor))

    def retry_dead(self, task_id: str, *, due_at: Optional[Time] = None,
                   delay_ms: Optional[int] = None) -> JsonObject:
        """``POST /v1/dead/{id}/retry``: the task, delayed again with its attempts reset (due
        now without a time)."""
        return self._object("POST", f"/v1/dead/{_id(task_id)}/retry", _due(due_at, delay_ms, required=False))

    def delete_dead(self, task_id: str) -> JsonObject:
        """``DELETE /v1/dead/{id}``: ``{"id", "deleted": true}``."""
        return self._object("DELETE", f"/v1/dead/{_id(task_id)}")

    # ---- schedules ---------------------------------------------------------------------

    def create_schedule(self, spec: Mapping[str, Any]) -> JsonObject:
        """``POST /v1/schedules``: ``spec`` is the API's object (``id``, ``cron`` or
        ``every_ms``, ``time_zone``, ``callback``, ...); the same spec again is a 200."""
        return self._object("POST", "/v1/schedules", dict(spec))

    def get_schedule(self, schedule_id: str) -> JsonObject:
        """``GET /v1/schedules/{id}``."""
        return self._object("GET", f"/v1/schedules/{_id(schedule_id)}")

    def change_schedule(self, schedule_id: str, changes: Mapping[str, Any]) -> JsonObject:
        """``PATCH /v1/schedules/{id}``: the fields to change."""
        return self._object("PATCH", f"/v1/schedules/{_id(schedule_id)}", dict(changes))

    def delete_schedule(self, schedule_id: str) -> JsonObject:
        """``DELETE /v1/schedules/{id}``."""
        return self._object("DELETE", f"/v1/schedules/{_id(schedule_id)}")

    def list_schedules(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> Page:
        """``GET /v1/schedules``: a page of schedules."""
        return self._page("/v1/schedules", {"limit": limit, "cursor": cursor})

    def iter_schedules(self, *, limit: Optional[int] = None) -> Iterator[JsonObject]:
        """Every schedule, page after page."""
        return self._walk(lambda cursor: self.list_schedules(limit=limit, cursor=cursor))

    def pause_schedule(self, schedule_id: str) -> JsonObject:
        """``POST /v1/schedules/{id}/pause`` (idempotent)."""
        return self._object("POST", f"/v1/schedules/{_id(schedule_id)}/pause")

    def resume_schedule(self, schedule_id: str) -> JsonObject:
        """``POST /v1/schedules/{id}/resume`` (idempotent)."""
        return self._object("POST", f"/v1/schedules/{_id(schedule_id)}/resume")

    def trigger_schedule(self, schedule_id: str) -> JsonObject:
        """``POST /v1/schedules/{id}/trigger``: the task it made now (not idempotent)."""
        return self._object("POST", f"/v1/schedules/{_id(schedule_id)}/trigger")

    def next_occurrences(self, schedule_id: str, *, count: Optional[int] = None,
                         after: Optional[Time] = None) -> JsonObject:
        """``GET /v1/schedules/{id}/next``: ``{"time_zone", "occurrences": [...]}``."""
        query = self._query({"count": count, "after": after})
        return self._object("GET", f"/v1/schedules/{_id(schedule_id)}/next{query}")

    def preview_schedule(self, rule: Mapping[str, Any]) -> JsonObject:
        """``POST /v1/schedules:preview``: the next occurrences of an unsaved rule."""
        return self._object("POST", "/v1/schedules:preview", dict(rule))

    # ---- queues ------------------------------------------------------------------------

    def create_queue(self, spec: Mapping[str, Any]) -> JsonObject:
        """``POST /v1/queues`` (scope ``admin``): ``spec`` is the API's object (``id``, and
        ``retry``); the same settings again answer the queue, others raise a 409
        ``queue_conflict``."""
        return self._object("POST", "/v1/queues", dict(spec))

    def get_queue(self, queue_id: str) -> JsonObject:
        """``GET /v1/queues/{id}`` (the slash of ``acme/billing`` is encoded)."""
        return self._object("GET", f"/v1/queues/{_id(queue_id)}")

    def change_queue(self, queue_id: str, changes: Mapping[str, Any]) -> JsonObject:
        """``PATCH /v1/queues/{id}`` (scope ``admin``): the fields to change."""
        return self._object("PATCH", f"/v1/queues/{_id(queue_id)}", dict(changes))

    def delete_queue(self, queue_id: str) -> JsonObject:
        """``DELETE /v1/queues/{id}`` (scope ``admin``): a 409 ``queue_not_empty`` while it
        holds delayed, claimed or dead tasks."""
        return self._object("DELETE", f"/v1/queues/{_id(queue_id)}")

    def list_queues(self, *, id_prefix: Optional[str] = None, limit: Optional[int] = None,
                    cursor: Optional[str] = None) -> Page:
        """``GET /v1/queues``: a page of queues, in byte order of their names."""
        return self._page("/v1/queues", {"id_prefix": id_prefix, "limit": limit, "cursor": cursor})

    def iter_queues(self, *, id_prefix: Optional[str] = None,
                    limit: Optional[int] = None) -> Iterator[JsonObject]:
        """Every queue, page after page."""
        return self._walk(lambda cursor: self.list_queues(id_prefix=id_prefix, limit=limit,
                                                          cursor=cursor))

    # ---- the service -------------------------------------------------------------------

    def stats(self) -> JsonObject:
        """``GET /v1/stats``: the store's counts and this node's view."""
        return self._object("GET", "/v1/stats")

    # ---- plumbing ----------------------------------------------------------------------

    @staticmethod
    def _query(params: Mapping[str, Any]) -> str:
        pairs = [(k, _time(v) if isinstance(v, datetime.datetime) else str(v))
                 for k, v in params.items() if v is not None]
        return "?" + urllib.parse.urlencode(pairs) if pairs else ""

    def _page(self, path: str, query: Mapping[str, Any]) -> Page:
        answer = self._object("GET", path + self._query(query))
        listed = _json_list(answer.get("entries"))
        entries = [_json_object(e) for e in listed] if listed is not None else [None]
        objects = [e for e in entries if e is not None]
        cursor = answer.get("next_cursor")
        if len(objects) != len(entries) or not (cursor is None or isinstance(cursor, str)):
            raise ResponseError(f"GET {path}: not a page (entries, next_cursor)", 200)
        return Page(objects, cursor)

    @staticmethod
    def _walk(fetch: Callable[[Optional[str]], Page]) -> Iterator[JsonObject]:
        cursor: Optional[str] = None
        while True:
            page = fetch(cursor)
            yield from page.entries
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def _object(self, method: str, path: str, body: Optional[JsonObject] = None) -> JsonObject:
        status, headers, data = self._request(method, path, body)
        what = f"{method} {path}: {status}"
        if headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            raise ResponseError(f"{what} answered {headers.get('content-type')!r}, not JSON: {data[:200]!r}", status)
        try:
            value = json.loads(data)
        except ValueError as e:  # UnicodeDecodeError too
            raise ResponseError(f"{what} answered malformed JSON ({e}): {data[:200]!r}", status) from None
        obj = _json_object(value)
        if obj is None:
            raise ResponseError(f"{what} answered JSON that is not an object: {data[:200]!r}", status)
        if 200 <= status < 300:
            return obj
        error = _json_object(obj.get("error"))
        if error is None or not isinstance(error.get("code"), str):
            raise ResponseError(f"{what} without an error object: {data[:200]!r}", status)
        raise api_error(status, error, _retry_after(headers.get("retry-after")))

    def _request(self, method: str, path: str, body: Optional[JsonObject]) -> Tuple[int, Dict[str, str], bytes]:
        deadline = time.monotonic() + self._timeout
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
        if self._token is not None:
            headers["Authorization"] = f"Bearer {self._token}"
        conn: http.client.HTTPConnection
        if self._https:
            conn = http.client.HTTPSConnection(self._host, self._port, timeout=self._timeout,
                                               context=self._ssl or ssl.create_default_context())
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
        try:
            conn.request(method, self._prefix + path, body=data, headers=headers)
            res = conn.getresponse()
            length = res.getheader("Content-Length")
            if length is not None and length.isdigit() and int(length) > self._max:
                raise ResponseError(f"{method} {path}: an answer of {length} bytes, more than "
                                    f"max_response_bytes ({self._max})", res.status)
            chunks: List[bytes] = []
            size = 0
            while True:  # in pieces, so that a slow drip cannot outlast the timeout
                if time.monotonic() > deadline:
                    raise TransportError(f"{method} {path}: no whole answer within {self._timeout} s")
                chunk = res.read1(65536)
                if not chunk:
                    break
                size += len(chunk)
                if size > self._max:
                    raise ResponseError(f"{method} {path}: an answer larger than max_response_bytes "
                                        f"({self._max})", res.status)
                chunks.append(chunk)
            return res.status, {k.lower(): v for k, v in res.getheaders()}, b"".join(chunks)
        except (OSError, http.client.HTTPException) as e:  # socket.timeout is an OSError
            raise TransportError(f"{method} {path}: {e!r}") from e
        finally:
            conn.close()
