"""A local HTTP proxy in front of moto's server that answers chosen AWS requests with faults: throttling,
5xx, slow responses, AccessDenied; records every request it passes and counts them by operation (``operations``:
``glue:CreateTable``, ``s3:CopyObject``); and can hold each request for a fixed ``latency``, as a real service's
round trip does (moto answers in a millisecond). A request is named by its JSON-protocol target
(``AWSGlue.CreateTable``, matched exactly), or for S3 by ``S3.<method> <path>`` (matched by its beginning)."""
from __future__ import annotations

import http.client
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

S3_FAULTS = {"throttle": (503, "SlowDown", "Please reduce your request rate."),
             "5xx": (500, "InternalError", "We encountered an internal error. Please try again."),
             "denied": (403, "AccessDenied", "Access Denied")}
FAULTS = {
    "throttle": (400, "ThrottlingException", "Rate exceeded"),
    "5xx": (500, "InternalServiceException", "Internal service error"),
    "denied": (400, "AccessDeniedException", "User: arn:aws:sts::123456789012:assumed-role/SegmentEMRInstanceProfileRole/i-0abc "
                                             "is not authorized to perform: glue:{action} on resource: "
                                             "arn:aws:glue:us-east-1:123456789012:database/*"),
    "notfound": (400, "EntityNotFoundException", "Entity Not Found"),
    # Glue keeps 100,000 versions of a table; an update that archives one more is refused
    "version_limit": (400, "ResourceNumberLimitExceededException", "Number of table versions exceeds the limit of 100000"),
}


def s3_operation(method: str, path: str, headers) -> str:
    """The S3 API operation of a path-style REST request."""
    url = urlparse(path)
    query = parse_qs(url.query, keep_blank_values=True)
    if not url.path.lstrip("/").partition("/")[2]:  # the bucket itself
        if method == "POST" and "delete" in query:
            return "DeleteObjects"
        if "uploads" in query:
            return "ListMultipartUploads"
        return {"HEAD": "HeadBucket", "PUT": "CreateBucket"}.get(method, "ListObjectsV2" if "list-type" in query
                                                                  else "ListObjects")
    if "uploadId" in query:
        return {"PUT": "UploadPart", "POST": "CompleteMultipartUpload", "DELETE": "AbortMultipartUpload"}.get(
            method, "ListParts")
    if method == "POST" and "uploads" in query:
        return "CreateMultipartUpload"
    if method == "PUT":
        return "CopyObject" if any(k.lower() == "x-amz-copy-source" for k in headers) else "PutObject"
    return {"GET": "GetObject", "HEAD": "HeadObject", "DELETE": "DeleteObject"}.get(method, method)


@dataclass
class FaultProxy:
    upstream: str
    plan: dict[str, list[str]] = field(default_factory=dict)  # name prefix -> faults to answer, in order ("slow" delays)
    served: list[tuple[str, str]] = field(default_factory=list)
    requests: list[dict] = field(default_factory=list)  # method, path, headers and body of each request passed on
    latency: float = 0.0  # seconds each request passed on is held, as a round trip to AWS
    operations: Counter = field(default_factory=Counter)  # requests passed on by operation: glue:GetTables, s3:GetObject
    counting: threading.Lock = field(default_factory=threading.Lock)  # the handler's threads share plan and counts
    timeline: list[tuple[float, str]] = field(default_factory=list)  # (time.time(), operation) of each request passed on

    def start(self) -> str:
        proxy = self
        target = urlparse(self.upstream)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def handle_any(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
                glue = self.headers.get("X-Amz-Target", "")
                name = glue or f"S3.{self.command} {self.path}"
                with proxy.counting:  # the handler's threads take faults from one plan
                    key = next((k for k in proxy.plan
                                if proxy.plan[k] and (name == k or k.startswith("S3.") and name.startswith(k))), None)
                    fault = proxy.plan[key].pop(0) if key else None
                if fault == "version_limit" and json.loads(body or b"{}").get("SkipArchive"):
                    fault = None  # an update that archives no version is not refused
                    proxy.served.append((key, "version_limit skipped"))
                if fault:
                    proxy.served.append((key, fault))
                if fault == "slow":
                    time.sleep(2)
                elif fault:
                    self._fault(fault, glue)
                    return
                proxy.requests.append({"method": self.command, "path": self.path, "headers": dict(self.headers),
                                       "body": body})
                operation = ("glue:" + glue.split(".")[-1] if glue else
                             "s3:" + s3_operation(self.command, self.path, self.headers.keys()))
                with proxy.counting:
                    proxy.operations[operation] += 1
                    proxy.timeline.append((time.time(), operation))
                if proxy.latency:
                    time.sleep(proxy.latency)
                connection = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection",)}
                connection.request(self.command, self.path, body=body if body or self.command != "GET" else None,
                                   headers=headers)
                answer = connection.getresponse()
                data = answer.read()
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in ("content-length", "connection", "transfer-encoding", "server", "date"):
                        self.send_header(key, value)
                length = answer.getheader("Content-Length") if self.command == "HEAD" else str(len(data))
                self.send_header("Content-Length", length or "0")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                connection.close()

            def _fault(self, fault, glue):
                if glue:
                    status, code, message = FAULTS[fault]
                    payload = json.dumps({"__type": code, "message": message.format(action=glue.split(".")[-1])}).encode()
                    kind = "application/x-amz-json-1.1"
                else:
                    status, code, message = S3_FAULTS[fault]
                    payload = (f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{code}</Code><Message>{message}"
                               f"</Message><RequestId>fault</RequestId></Error>").encode()
                    kind = "application/xml"
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_any

        class Server(ThreadingHTTPServer):
            request_queue_size = 128  # a pool of 16 threads or more connects at once

        self.server = Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
