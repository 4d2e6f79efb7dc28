"""A receiver of timewheeld's callbacks on the standard library's http.server, verifying
each one with timewheel_client.Verifier before it looks at the body.

Why it is shaped so: the handler reads exactly Content-Length bytes from the socket and
verifies those raw bytes; only then does it parse them. The callback URL it verifies against
is the one given at submit (``--url``), never one rebuilt from the request. It answers 401
to a request that does not verify (timewheeld ends a task on a 4xx other than 408 and 429, so
a wrong secret shows as dead letters, not as endless retries) and 200 once the work is done
(any 2xx ends the task). The tests (tests/test_timewheeld.py) run this handler.

    TIMEWHEEL_SIGNING_SECRETS=new,old python3 receiver.py --port 9000 --url http://127.0.0.1:9000/hook
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
from typing import Callable, Type

from timewheel_client import SignatureError, Verifier

MAX_BODY = 1024 * 1024 + 1  # timewheeld sends at most 1 MiB of callback body


def make_handler(verifier: Verifier, url: str,
                 on_callback: Callable[[str, int, bytes], None]) -> Type[http.server.BaseHTTPRequestHandler]:
    """A handler class calling ``on_callback(task_id, attempt, body)`` for each verified
    callback to ``url`` (any method, any path of this server)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                self.send_error(413)
                return
            body = self.rfile.read(length)  # the raw bytes: verify these, parse after
            try:
                verifier.verify(self.command, url, self.headers, body)
            except SignatureError as e:
                self.send_response(401)
                self.send_header("Content-Length", str(len(e.reason)))
                self.end_headers()
                self.wfile.write(e.reason.encode())
                return
            on_callback(self.headers["Idempotency-Key"], int(self.headers["Timewheel-Attempt"]), body)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        def log_message(self, format: str, *args: object) -> None:
            pass  # the callback itself is printed instead

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description="A receiver of timewheeld's callbacks, verifying each.")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--url", required=True, help="the callback URL as given at submit")
    args = parser.parse_args()
    verifier = Verifier(os.environ["TIMEWHEEL_SIGNING_SECRETS"].split(","))

    def show(task_id: str, attempt: int, body: bytes) -> None:
        try:
            print(task_id, attempt, json.loads(body) if body else None, flush=True)
        except ValueError:
            print(task_id, attempt, body[:200], flush=True)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(verifier, args.url, show))
    server.serve_forever()


if __name__ == "__main__":
    main()
