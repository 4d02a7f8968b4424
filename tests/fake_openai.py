"""A protocol-level fake OpenAI-compatible server on 127.0.0.1 (http.server in a thread, canned JSON).

Tests check their own requests and parsing with it, never a model. `FakeOpenAIServer(reply=...)` answers
`POST /v1/chat/completions` with `reply(body)` (the request's JSON; default: "reply to: <last message>"),
lists `models` at `GET /v1/models`, records every request in `.requests`, and answers the next
`.fail_next` requests with HTTP 503. It runs in the test process, so a client in a subprocess (a
benchmark harness, a peer's own code) reaches it at `.base_url` too.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


def echo_last(body: dict) -> str:
    return f"reply to: {body['messages'][-1]['content']}"


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # keep test output clean
        pass

    def _send(self, code: int, payload: dict):
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.rstrip("/") == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in self.server.models]})
        else:
            self._send(404, {"error": "not found"})

    def do_POST(self):
        server = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with server.lock:
            server.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
            failing = server.fail_next > 0
            server.fail_next -= failing
        if failing:
            return self._send(503, {"error": "busy"})
        if body.get("model") not in server.models:
            return self._send(400, {"error": {"message": f"model {body.get('model')} not found"}})
        last = str(body["messages"][-1]["content"])
        text = server.reply(body)
        self._send(200, {
            "id": "cmpl-1", "object": "chat.completion", "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10 + len(last), "completion_tokens": len(text.split()), "total_tokens": 0},
        })


class FakeOpenAIServer:
    """`with FakeOpenAIServer(reply=fn, models=("served-model",)) as srv: ... srv.base_url ...`"""

    def __init__(self, reply: Callable[[dict], str] = echo_last, models=("served-model",), port: int = 0):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self.httpd.requests, self.httpd.fail_next, self.httpd.lock = [], 0, threading.Lock()
        self.httpd.reply, self.httpd.models = reply, tuple(models)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def requests(self) -> list[dict]:
        return self.httpd.requests

    @property
    def fail_next(self) -> int:
        return self.httpd.fail_next

    @fail_next.setter
    def fail_next(self, n: int) -> None:
        self.httpd.fail_next = n

    def start(self) -> "FakeOpenAIServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv=None) -> None:
    """`python tests/fake_openai.py --port P [--model NAME]`: serve until killed (a stand-in server process)."""
    import argparse
    import time

    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--model", default="served-model")
    args = ap.parse_args(argv)
    srv = FakeOpenAIServer(models=(args.model,), port=args.port).start()
    try:
        while True:
            time.sleep(3600)
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
