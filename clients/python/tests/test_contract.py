"""The client against the OpenAPI document, offline: every operation of docs/openapi.json
(but the probes, metrics and the document itself) has a client method, and that method sends
the document's method to the document's path. Why: a route the service adds with its
document then fails here until the client learns it, and a typo in a path fails without a
server.
"""

import json
import os
import unittest
from typing import Any, Callable, Dict, List, Tuple

from timewheel_client import Client

DOCUMENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "docs", "openapi.json")
NOT_FOR_CLIENTS = {"getOpenApi", "health", "ready", "metrics"}
ANSWER = json.dumps({"entries": [], "next_cursor": None, "results": [{"status": 201, "task": {}}]}).encode()

CALLS: Dict[str, Callable[[Client], Any]] = {
    "submitTask": lambda c: c.submit({"url": "http://x/"}, delay_ms=1),
    "submitTasks": lambda c: c.submit_batch([Client.task_spec({"url": "http://x/"}, delay_ms=1)]),
    "listTasks": lambda c: c.list_tasks("dead"),
    "getTask": lambda c: c.get("x"),
    "rescheduleTask": lambda c: c.reschedule("x", delay_ms=1),
    "cancelTask": lambda c: c.cancel("x"),
    "reportResult": lambda c: c.report_result("x", attempt=1, outcome="success"),
    "listDead": lambda c: c.list_dead(),
    "deleteDead": lambda c: c.delete_dead("x"),
    "retryDead": lambda c: c.retry_dead("x"),
    "createSchedule": lambda c: c.create_schedule({}),
    "listSchedules": lambda c: c.list_schedules(),
    "previewSchedule": lambda c: c.preview_schedule({}),
    "getSchedule": lambda c: c.get_schedule("x"),
    "changeSchedule": lambda c: c.change_schedule("x", {}),
    "deleteSchedule": lambda c: c.delete_schedule("x"),
    "nextOccurrences": lambda c: c.next_occurrences("x"),
    "pauseSchedule": lambda c: c.pause_schedule("x"),
    "resumeSchedule": lambda c: c.resume_schedule("x"),
    "triggerSchedule": lambda c: c.trigger_schedule("x"),
    "getStats": lambda c: c.stats(),
    "createQueue": lambda c: c.create_queue({}),
    "listQueues": lambda c: c.list_queues(),
    "getQueue": lambda c: c.get_queue("x"),
    "changeQueue": lambda c: c.change_queue("x", {}),
    "deleteQueue": lambda c: c.delete_queue("x"),
}


class RecordingClient(Client):
    """Sends nothing: records each request and answers a JSON object every method accepts."""

    def __init__(self) -> None:
        super().__init__("http://127.0.0.1:1")
        self.sent: List[Tuple[str, str]] = []

    def _request(self, method, path, body):
        self.sent.append((method, path.split("?")[0]))
        return 200, {"content-type": "application/json"}, ANSWER


class EveryOperationOfTheDocument(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(DOCUMENT) as f:
            paths = json.load(f)["paths"]
        cls.operations = {op["operationId"]: (method.upper(), path.replace("{id}", "x"))
                          for path, ops in paths.items() for method, op in ops.items()
                          if isinstance(op, dict) and "operationId" in op}

    def test_every_operation_for_clients_has_a_method_and_no_method_lacks_one(self):
        self.assertEqual(set(self.operations) - NOT_FOR_CLIENTS, set(CALLS))

    def test_each_method_sends_the_method_and_path_of_its_operation(self):
        for operation, call in CALLS.items():
            client = RecordingClient()
            call(client)
            self.assertEqual(client.sent, [self.operations[operation]], operation)


if __name__ == "__main__":
    unittest.main()
