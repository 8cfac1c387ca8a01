"""A local HTTP proxy in front of moto's server that answers chosen AWS requests with faults: throttling,
5xx, slow responses, AccessDenied. Requests are matched by their JSON-protocol target (``AWSGlue.CreateTable``)."""
from __future__ import annotations

import http.client
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

FAULTS = {
    "throttle": (400, "ThrottlingException", "Rate exceeded"),
    "5xx": (500, "InternalServiceException", "Internal service error"),
    "denied": (400, "AccessDeniedException", "User: arn:aws:sts::123456789012:assumed-role/SegmentEMRInstanceProfileRole/i-0abc "
                                             "is not authorized to perform: glue:{action} on resource: "
                                             "arn:aws:glue:us-east-1:123456789012:database/*"),
}


@dataclass
class FaultProxy:
    upstream: str
    plan: dict[str, list[str]] = field(default_factory=dict)  # target -> faults to answer, in order ("slow" delays)
    served: list[tuple[str, str]] = field(default_factory=list)

    def start(self) -> str:
        proxy = self
        target = urlparse(self.upstream)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                action = self.headers.get("X-Amz-Target", "")
                faults = proxy.plan.get(action)
                fault = faults.pop(0) if faults else None
                if fault:
                    proxy.served.append((action, fault))
                if fault == "slow":
                    time.sleep(2)
                elif fault:
                    status, code, message = FAULTS[fault]
                    payload = json.dumps({"__type": code, "message": message.format(action=action.split(".")[-1])}).encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/x-amz-json-1.1")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                connection = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                connection.request("POST", self.path, body=body, headers=headers)
                answer = connection.getresponse()
                data = answer.read()
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in ("content-length", "connection", "transfer-encoding", "server", "date"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                connection.close()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
