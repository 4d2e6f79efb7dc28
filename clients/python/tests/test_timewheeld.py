"""The client and the receiver helper against a real timewheeld (TIMEWHEELD_BINARY, set by
run.py), started once by test/support/timewheeld_process.py on SQLite with a token and the
signing secrets ``new,old``; a recording receiver of this process gets its callbacks.

Why against the real service: the client's paths, bodies and error shapes, and the receiver
helper's idea of what is signed, are only proven by the service that answers and signs. Each
client call runs once with its answer checked; the errors come back as the exception types
with their code and field; the signatures the service made verify with either of its
secrets, and fail when the body, the secret, the time or the attempt number differs. Answers
the service never gives (not JSON, too large, 429/503) come from a stub server at the end.
"""

import datetime
import http.server
import json
import os
import tempfile
import threading
import time
import unittest
from typing import Any, Dict, List

from timewheeld_process import Service, wait_for

import receiver as example
from timewheel_client import (ApiError, AuthError, BadRequestError, Client, ConflictError,
                              NotFoundError, ResponseError, RetryLaterError, SignatureError,
                              TransportError, Verifier)

TOKEN = "client-test-token"
service: Service
client: Client
hooks: "Receiver"
tmp: tempfile.TemporaryDirectory


class Receiver:
    """Records every request it gets, raw; answers by path: /ok 200, /fail 400, /defer 202,
    /flaky 503 on a task's first attempt then 200."""

    def __init__(self) -> None:
        self.requests: List[Dict[str, Any]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _handle(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                request = {"method": self.command, "path": self.path, "headers": dict(self.headers.items()),
                           "body": body}
                with outer.lock:
                    outer.requests.append(request)
                attempt = self.headers.get("Timewheel-Attempt")
                status = {"/ok": 200, "/fail": 400, "/defer": 202}.get(self.path.split("?")[0], 200)
                if self.path == "/flaky" and attempt == "1":
                    status = 503
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def of(self, task_id: str, attempt: str = "1") -> Dict[str, Any]:
        def find():
            with self.lock:
                return next((r for r in self.requests if r["headers"].get("Idempotency-Key") == task_id
                             and r["headers"].get("Timewheel-Attempt") == attempt), None)
        return wait_for(find, f"the callback of {task_id}, attempt {attempt}", 20)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def setUpModule() -> None:
    global service, client, hooks, tmp
    tmp = tempfile.TemporaryDirectory(prefix="pyclient-")
    service = Service(os.environ["TIMEWHEELD_BINARY"], "sqlite", tmp.name, TOKEN,
                      ["--signing-secret", "new-secret,old-secret"])
    client = Client(service.base, TOKEN, timeout=10)
    hooks = Receiver()


def tearDownModule() -> None:
    hooks.close()
    service.close()
    tmp.cleanup()


def state_becomes(task_id: str, state: str) -> Dict[str, Any]:
    return wait_for(lambda: (lambda t: t if t["state"] == state else None)(client.get(task_id)),
                    f"{task_id} to be {state}", 20)


def later(ms: int = 3_600_000) -> Dict[str, Any]:
    return {"delay_ms": ms}


class TheClientAgainstTimewheeld(unittest.TestCase):
    def test_a_submit_creates_then_keeps_then_replaces_a_task(self):
        callback = {"url": f"{hooks.base}/ok", "body": '{"n": 1}', "headers": {"X-Team": "billing"}}
        created = client.submit(callback, id="submit-1", **later(), retry={"attempts": 3})
        self.assertEqual((created["id"], created["state"]), ("submit-1", "delayed"))
        self.assertNotIn("replaced", created)
        self.assertEqual(created["callback"]["body"], '{"n": 1}')
        kept = client.submit({"url": f"{hooks.base}/other"}, id="submit-1", **later())
        self.assertIs(kept["replaced"], False)
        self.assertEqual(kept["callback"]["url"], f"{hooks.base}/ok")
        replaced = client.submit({"url": f"{hooks.base}/other"}, id="submit-1", on_conflict="replace",
                                 due_at=datetime.datetime(2030, 1, 2, 3, 4, 5, 678000, datetime.timezone.utc))
        self.assertIs(replaced["replaced"], True)
        self.assertEqual(replaced["due_at"], "2030-01-02T03:04:05.678Z")
        self.assertEqual(replaced["callback"]["url"], f"{hooks.base}/other")

    def test_a_debounced_submit_caps_the_due_time_after_the_first(self):
        first = client.submit({"url": f"{hooks.base}/ok"}, id="debounce-1", delay_ms=60_000,
                              on_conflict="debounce", max_delay_ms=90_000)
        again = client.submit({"url": f"{hooks.base}/ok"}, id="debounce-1", delay_ms=3_600_000,
                              on_conflict="debounce", max_delay_ms=90_000)
        self.assertIs(again["replaced"], True)
        # the store's created_at: the 201's is this node's clock just before the submit
        created = client.get("debounce-1")["created_at"]
        self.assertGreaterEqual(created, first["created_at"])
        cap = datetime.datetime.fromisoformat(created.replace("Z", "+00:00")) + datetime.timedelta(milliseconds=90_000)
        self.assertLessEqual(datetime.datetime.fromisoformat(again["due_at"].replace("Z", "+00:00")), cap)

    def test_notices_are_submitted_with_the_callback(self):
        task = client.submit({"url": f"{hooks.base}/ok", "on_success": {"url": f"{hooks.base}/notice"},
                              "on_failure": {"url": f"{hooks.base}/notice", "headers": {"X-Team": "ops"}}},
                             id="notices-1", **later())
        self.assertEqual(client.get("notices-1")["callback"]["on_failure"],
                         {"url": f"{hooks.base}/notice", "headers": {"X-Team": "ops"}})
        self.assertEqual(task["callback"]["on_success"]["url"], f"{hooks.base}/notice")

    def test_a_bad_callback_url_raises_bad_request_naming_the_field(self):
        with self.assertRaises(BadRequestError) as caught:
            client.submit({"url": "ftp://billing.example/x"}, id="bad-1", **later())
        e = caught.exception
        self.assertEqual((e.status, e.code, e.field), (400, "invalid_field", "callback.url"))
        self.assertTrue(e.message)
        with self.assertRaises(NotFoundError):
            client.get("bad-1")  # nothing stored

    def test_an_unknown_field_of_a_schedule_raises_bad_request_naming_it(self):
        with self.assertRaises(BadRequestError) as caught:
            client.create_schedule({"id": "s-bad", "every_ms": 60_000, "callback": {"url": f"{hooks.base}/ok"},
                                    "colour": "red"})
        self.assertEqual(caught.exception.field, "colour")

    def test_an_unknown_task_raises_not_found(self):
        with self.assertRaises(NotFoundError) as caught:
            client.get("no such/task")
        self.assertEqual((caught.exception.status, caught.exception.code), (404, "not_found"))

    def test_cancel_then_cancel_again_raises_conflict_too_late(self):
        client.submit({"url": f"{hooks.base}/ok"}, id="cancel-1", **later())
        self.assertEqual(client.cancel("cancel-1"), {"id": "cancel-1", "state": "cancelled"})
        with self.assertRaises(ConflictError) as caught:
            client.cancel("cancel-1")
        self.assertEqual((caught.exception.status, caught.exception.code), (409, "too_late"))

    def test_a_replace_of_a_cancelled_task_raises_conflict_with_its_state(self):
        client.submit({"url": f"{hooks.base}/ok"}, id="conflict-1", **later())
        client.cancel("conflict-1")
        with self.assertRaises(ConflictError) as caught:
            client.submit({"url": f"{hooks.base}/ok"}, id="conflict-1", on_conflict="replace", **later())
        self.assertEqual((caught.exception.code, caught.exception.state), ("conflict", "cancelled"))

    def test_reschedule_moves_the_due_time_and_refuses_a_cancelled_task(self):
        client.submit({"url": f"{hooks.base}/ok"}, id="move-1", **later())
        moved = client.reschedule("move-1", due_at="2031-05-06T07:08:09+02:00")
        self.assertEqual(moved["due_at"], "2031-05-06T05:08:09.000Z")
        client.cancel("move-1")
        with self.assertRaises(ConflictError) as caught:
            client.reschedule("move-1", delay_ms=1000)
        self.assertEqual(caught.exception.code, "wrong_state")

    def test_a_batch_stores_the_good_items_and_reports_the_bad_one(self):
        results = client.submit_batch([
            Client.task_spec({"url": f"{hooks.base}/ok"}, id="batch-1", **later()),
            Client.task_spec({"url": "ftp://billing.example/b"}, id="batch-2", **later()),
            Client.task_spec({"url": f"{hooks.base}/ok"}, id="batch-1", **later()),
        ])
        self.assertEqual([r.status for r in results], [201, 400, 200])
        self.assertEqual(results[0].task["id"], "batch-1")
        self.assertIsInstance(results[1].error, BadRequestError)
        self.assertEqual((results[1].error.field, results[1].error.index), ("callback.url", 1))
        self.assertIs(results[2].task["replaced"], False)
        with self.assertRaises(NotFoundError):
            client.get("batch-2")

    def test_listing_walks_every_page_with_its_filters(self):
        ids = [f"page-{i}" for i in range(5)]
        for i, task_id in enumerate(ids):
            client.submit({"url": f"{hooks.base}/ok"}, id=task_id, delay_ms=3_600_000 + i * 1000)
        first = client.list_tasks("delayed", id_prefix="page-", limit=2)
        self.assertEqual([e["id"] for e in first.entries], ids[:2])
        self.assertIsNotNone(first.next_cursor)
        self.assertEqual([e["id"] for e in client.iter_tasks("delayed", id_prefix="page-", limit=2)], ids)
        self.assertEqual([e["id"] for e in client.iter_tasks("delayed", id_prefix="page-", order="desc")],
                         ids[::-1])
        third_due = datetime.datetime.fromisoformat(client.get("page-2")["due_at"].replace("Z", "+00:00"))
        self.assertEqual([e["id"] for e in client.iter_tasks("delayed", id_prefix="page-", due_before=third_due)],
                         ids[:2])  # due_before is exclusive
        self.assertEqual(list(client.iter_tasks("delayed", id_prefix="page-", host="elsewhere.example")), [])
        with self.assertRaises(BadRequestError) as caught:
            client.list_tasks("delayed", cursor="not-a-cursor")
        self.assertEqual(caught.exception.field, "cursor")

    def test_dead_letters_are_listed_retried_and_deleted(self):
        for task_id in ("dead-1", "dead-2"):
            client.submit({"url": f"{hooks.base}/fail"}, id=task_id, delay_ms=0)
            state_becomes(task_id, "dead")
        dead = {e["id"]: e for e in client.iter_dead(limit=1)}
        self.assertLessEqual({"dead-1", "dead-2"}, set(dead))
        self.assertEqual(dead["dead-1"]["attempts"], 1)
        retried = client.retry_dead("dead-1", delay_ms=3_600_000)
        self.assertEqual((retried["id"], retried["state"]), ("dead-1", "delayed"))
        self.assertEqual(client.delete_dead("dead-2"), {"id": "dead-2", "deleted": True})
        with self.assertRaises(NotFoundError):
            client.delete_dead("dead-2")
        self.assertNotIn("dead-2", [e["id"] for e in client.list_dead(limit=1000).entries])

    def test_a_result_report_ends_a_deferred_task_and_a_wrong_attempt_conflicts(self):
        client.submit({"url": f"{hooks.base}/defer"}, id="defer-1", delay_ms=0)
        hooks.of("defer-1")
        wait_for(lambda: client.get("defer-1")["state"] == "running", "defer-1 to wait for its result")
        with self.assertRaises(ConflictError) as caught:
            client.report_result("defer-1", attempt=2, outcome="success")
        self.assertEqual(caught.exception.code, "wrong_attempt")
        self.assertEqual(client.report_result("defer-1", attempt=1, outcome="failure", error="printer jammed"),
                         {"id": "defer-1", "attempt": 1, "accepted": True})
        self.assertEqual(state_becomes("defer-1", "dead")["last_error"], "printer jammed")
        with self.assertRaises(NotFoundError) as caught:
            client.report_result("defer-1", attempt=1, outcome="success")
        self.assertEqual(caught.exception.code, "no_pending_attempt")

    def test_stats_count_the_tasks_by_state(self):
        client.submit({"url": f"{hooks.base}/ok"}, id="stats-1", **later())
        stats = client.stats()
        self.assertEqual(set(stats["counts"]), {"delayed", "prefetched", "running", "finished", "dead", "cancelled"})
        self.assertGreaterEqual(stats["counts"]["delayed"], 1)
        self.assertEqual(stats["node"]["window_s"], 300)

    def test_a_schedule_is_created_read_listed_changed_paused_triggered_and_deleted(self):
        spec = {"id": "sched-1", "cron": "0 9 * * 1-5", "time_zone": "Europe/Berlin",
                "callback": {"url": f"{hooks.base}/ok"}}
        self.assertEqual(client.create_schedule(spec)["id"], "sched-1")
        self.assertEqual(client.create_schedule(spec)["id"], "sched-1")  # the same spec: 200
        self.assertEqual(client.get_schedule("sched-1")["time_zone"], "Europe/Berlin")
        self.assertIn("sched-1", [s["id"] for s in client.iter_schedules(limit=1)])
        self.assertEqual(client.change_schedule("sched-1", {"time_zone": "UTC"})["time_zone"], "UTC")
        self.assertIs(client.pause_schedule("sched-1")["paused"], True)
        self.assertIs(client.resume_schedule("sched-1")["paused"], False)
        nxt = client.next_occurrences("sched-1", count=3, after="2026-03-27T12:00:00Z")
        self.assertEqual([o["at"] for o in nxt["occurrences"]],
                         ["2026-03-30T09:00:00.000Z", "2026-03-31T09:00:00.000Z", "2026-04-01T09:00:00.000Z"])
        preview = client.preview_schedule({"cron": "30 2 * * *", "time_zone": "Europe/Berlin",
                                           "after": "2026-03-27T12:00:00Z", "count": 3})
        self.assertEqual(preview["occurrences"][1]["at"], "2026-03-29T01:00:00.000Z")
        triggered = client.trigger_schedule("sched-1")
        self.assertEqual(client.get(triggered["id"])["id"], triggered["id"])
        client.delete_schedule("sched-1")
        with self.assertRaises(NotFoundError):
            client.get_schedule("sched-1")

    def test_a_queue_is_created_read_listed_changed_used_and_deleted(self):
        spec = {"id": "acme/billing", "retry": {"attempts": 3, "base_ms": 1000, "cap_ms": 60000}}
        self.assertEqual(client.create_queue(spec)["generation"], 1)
        self.assertEqual(client.create_queue(spec)["generation"], 1)  # the same settings: 200
        with self.assertRaises(ConflictError) as caught:
            client.create_queue({"id": "acme/billing", "retry": {"attempts": 4}})
        self.assertEqual(caught.exception.code, "queue_conflict")
        self.assertEqual(client.get_queue("acme/billing")["retry"]["attempts"], 3)
        self.assertEqual([q["id"] for q in client.iter_queues(id_prefix="acme/", limit=1)], ["acme/billing"])
        self.assertEqual(client.change_queue("acme/billing", {"retry": {"attempts": 5}})["generation"], 2)
        task = client.submit({"url": f"{hooks.base}/ok"}, id="queued-1", queue="acme/billing", **later())
        self.assertEqual((task["queue"], task["retry"]["attempts"]), ("acme/billing", 5))
        self.assertEqual([t["id"] for t in client.iter_tasks("delayed", queue="acme/billing")], ["queued-1"])
        with self.assertRaises(BadRequestError) as bad:
            client.submit({"url": f"{hooks.base}/ok"}, queue="nope", **later())
        self.assertEqual((bad.exception.code, bad.exception.field), ("unknown_queue", "queue"))
        with self.assertRaises(ConflictError) as held:
            client.delete_queue("acme/billing")
        self.assertEqual(held.exception.code, "queue_not_empty")
        client.cancel("queued-1")
        client.delete_queue("acme/billing")
        with self.assertRaises(NotFoundError):
            client.get_queue("acme/billing")

    def test_a_wrong_token_raises_auth_error(self):
        with self.assertRaises(AuthError) as caught:
            Client(service.base, "wrong", timeout=5).stats()
        self.assertEqual(caught.exception.status, 401)


class SignaturesMadeByTimewheeld(unittest.TestCase):
    """One callback signed by the service with ``new-secret,old-secret``, checked as it came
    and with one thing changed at a time."""

    @classmethod
    def setUpClass(cls):
        cls.url = f"{hooks.base}/ok?x=1"
        client.submit({"url": cls.url, "method": "PUT", "body": '{"invoice": 42,\n "x": "\u00e9"}'},
                      id="signed-1", delay_ms=0)
        cls.request = hooks.of("signed-1")
        cls.t = int(cls.request["headers"]["Timewheel-Signature"].split(",")[0][2:])

    def verify(self, secrets=("new-secret",), now=None, method="PUT", url=None, headers=None, body=None):
        Verifier(list(secrets), clock=lambda: self.t if now is None else now).verify(
            method, url or self.url, headers or self.request["headers"],
            self.request["body"] if body is None else body)

    def refused(self, reason, **changes):
        with self.assertRaises(SignatureError) as caught:
            self.verify(**changes)
        self.assertEqual(caught.exception.reason, reason)

    def test_the_service_sends_one_v2_per_secret(self):
        self.assertEqual([p.split("=")[0] for p in self.request["headers"]["Timewheel-Signature"].split(",")],
                         ["t", "v2", "v2"])

    def test_the_new_secret_accepts_the_request_as_it_came(self):
        self.verify(("new-secret",))

    def test_only_the_old_secret_accepts_it_too_during_a_rotation(self):
        self.verify(("old-secret",))

    def test_a_tampered_body_is_refused(self):
        self.refused("mismatch", body=self.request["body"].replace(b"42", b"43"))

    def test_a_body_parsed_and_serialized_again_is_refused(self):
        self.refused("mismatch", body=json.dumps(json.loads(self.request["body"])).encode())

    def test_a_wrong_secret_is_refused(self):
        self.refused("mismatch", secrets=("wrong-secret",))

    def test_a_t_older_than_the_tolerance_is_refused(self):
        self.verify(now=self.t + 300)
        self.refused("expired", now=self.t + 301)

    def test_another_attempt_number_is_refused(self):
        self.refused("mismatch", headers=dict(self.request["headers"], **{"Timewheel-Attempt": "2"}))

    def test_another_method_or_url_is_refused(self):
        self.refused("mismatch", method="POST")
        self.refused("mismatch", url=f"{hooks.base}/ok")

    def test_a_second_attempt_verifies_with_its_own_number_only(self):
        client.submit({"url": f"{hooks.base}/flaky"}, id="signed-2", delay_ms=0,
                      retry={"attempts": 3, "base_ms": 50, "cap_ms": 100})
        second = hooks.of("signed-2", "2")
        now = int(second["headers"]["Timewheel-Signature"].split(",")[0][2:])
        v = Verifier(["old-secret"], clock=lambda: now)
        v.verify("POST", f"{hooks.base}/flaky", second["headers"], second["body"])
        with self.assertRaises(SignatureError):
            v.verify("POST", f"{hooks.base}/flaky", dict(second["headers"], **{"Timewheel-Attempt": "1"}),
                     second["body"])

    def test_a_completion_notice_is_signed_like_a_callback(self):
        client.submit({"url": f"{hooks.base}/ok", "on_success": {"url": f"{hooks.base}/notice"}},
                      id="signed-3", delay_ms=0)
        notice = hooks.of("signed-3~notice")
        Verifier(["new-secret"]).verify("POST", f"{hooks.base}/notice", notice["headers"], notice["body"])
        self.assertEqual(json.loads(notice["body"])["state"], "finished")

    def test_the_example_receiver_accepts_the_service_and_refuses_a_wrong_secret(self):
        got: List[Any] = []
        servers = []
        for secret in ("old-secret", "wrong-secret"):
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
            url = f"http://127.0.0.1:{server.server_address[1]}/hook"
            server.RequestHandlerClass = example.make_handler(
                Verifier([secret]), url, lambda task_id, attempt, body: got.append((task_id, attempt, body)))
            threading.Thread(target=server.serve_forever, daemon=True).start()
            servers.append((server, url))
        try:
            client.submit({"url": servers[0][1], "body": "hello"}, id="example-ok", delay_ms=0)
            client.submit({"url": servers[1][1], "body": "hello"}, id="example-refused", delay_ms=0)
            self.assertEqual(state_becomes("example-ok", "finished")["state"], "finished")
            self.assertIn("401", state_becomes("example-refused", "dead")["last_error"])
            self.assertEqual(got, [("example-ok", 1, b"hello")])
        finally:
            for server, _ in servers:
                server.shutdown()
                server.server_close()


class AnswersTheServiceNeverGives(unittest.TestCase):
    """A stub server answers what the test sets: the client fails clearly, never trusting it."""

    @classmethod
    def setUpClass(cls):
        cls.answer = (200, {}, b"")

        outer = cls

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                status, headers, body = outer.answer
                self.send_response(status)
                for k, v in headers.items():
                    if v is not None:  # None: leave the header out
                        self.send_header(k, v)
                if "Content-Length" not in headers:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if callable(body):
                    body(self.wfile)
                else:
                    self.wfile.write(body)

            def log_message(self, format, *args):
                pass

        cls.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        cls.stub = Client(f"http://127.0.0.1:{cls.server.server_address[1]}", "t", timeout=2,
                          max_response_bytes=1000)
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def answering(self, status, body, content_type="application/json", **headers):
        type(self).answer = (status, {"Content-Type": content_type, **headers}, body)

    def test_a_page_that_is_not_json_raises_a_response_error(self):
        self.answering(200, b"<html>proxy login</html>", "text/html")
        with self.assertRaisesRegex(ResponseError, "not JSON"):
            self.stub.stats()

    def test_malformed_json_or_json_of_the_wrong_shape_raises_a_response_error(self):
        for body in (b"{", b"[1, 2]", b'{"entries": 3, "next_cursor": null}', b"\xff\xfe"):
            self.answering(200, body)
            with self.assertRaises(ResponseError):
                self.stub.list_dead()

    def test_an_error_without_an_error_object_raises_a_response_error(self):
        self.answering(500, b'{"oops": true}')
        with self.assertRaises(ResponseError):
            self.stub.stats()

    def test_an_answer_larger_than_the_bound_raises_a_response_error(self):
        self.answering(200, b"{" + b" " * 2000 + b"}")
        with self.assertRaisesRegex(ResponseError, "max_response_bytes"):
            self.stub.stats()
        # without Content-Length (read until the server closes): counted while read
        self.answering(200, lambda out: out.write(b"{" + b" " * 5000 + b"}"), **{"Content-Length": None})
        with self.assertRaisesRegex(ResponseError, "larger than max_response_bytes"):
            self.stub.stats()

    def test_an_answer_that_comes_too_slowly_raises_a_transport_error(self):
        def drip(out):
            try:
                for _ in range(40):
                    out.write(b" ")
                    out.flush()
                    time.sleep(0.1)
            except OSError:
                pass  # the client gave up, as it should
        self.answering(200, drip, **{"Content-Length": "40"})
        started = time.monotonic()
        with self.assertRaises(TransportError):
            self.stub.stats()
        self.assertLess(time.monotonic() - started, 3.5)

    def test_503_and_429_raise_retry_later_with_retry_after(self):
        for status, code in ((503, "store_unavailable"), (429, "overloaded")):
            self.answering(status, json.dumps({"error": {"code": code, "message": "later"}}).encode(),
                           **{"Retry-After": "2"})
            with self.assertRaises(RetryLaterError) as caught:
                self.stub.stats()
            self.assertEqual((caught.exception.status, caught.exception.code, caught.exception.retry_after),
                             (status, code, 2.0))
            self.assertIsInstance(caught.exception, ApiError)

    def test_no_server_raises_a_transport_error(self):
        with self.assertRaises(TransportError):
            Client("http://127.0.0.1:1", timeout=2).stats()


if __name__ == "__main__":
    unittest.main()
