"""A stand-in for the few Kubernetes API server reads the chart's code makes: Helm's `lookup`
(discovery of /api/v1, then GET of one object) and the brokers' init container (GET of a
Node, with a bearer token over TLS). It serves the objects stored in it, 404 otherwise, and
records each request's path and Authorization header."""

from __future__ import annotations

import json
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

RESOURCES = {"Secret": ("secrets", True), "Node": ("nodes", False)}
"""kind -> (resource, namespaced) of the kinds it serves."""


def self_signed(directory: Path, addresses: list[str]) -> tuple[Path, Path]:
    """A certificate and key (openssl) valid for these IP addresses."""
    cert, key = directory / "tls.crt", directory / "tls.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=kubernetes", "-keyout", str(key), "-out", str(cert), "-addext",
         "subjectAltName=" + ",".join(f"IP:{a}" for a in addresses)],
        check=True, capture_output=True, timeout=60)
    return cert, key


class FakeApiServer:
    def __init__(self, host: str = "127.0.0.1", tls: tuple[Path, Path] | None = None) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                server.requests.append((self.path, self.headers.get("Authorization", "")))
                path = self.path.split("?")[0]
                body = server.discovery() if path == "/api/v1" else server.objects.get(path)
                status = 200 if body is not None else 404
                data = json.dumps(body or {"kind": "Status", "apiVersion": "v1",
                                           "status": "Failure", "reason": "NotFound",
                                           "code": 404}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer((host, 0), Handler)
        scheme = "http"
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*map(str, tls))
            self.http.socket = context.wrap_socket(self.http.socket, server_side=True)
            scheme = "https"
        self.port = self.http.server_port
        self.url = f"{scheme}://{host}:{self.port}"

    @staticmethod
    def discovery() -> dict[str, Any]:
        return {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
            {"name": resource, "singularName": kind.lower(), "namespaced": namespaced,
             "kind": kind, "verbs": ["get", "list"]}
            for kind, (resource, namespaced) in RESOURCES.items()]}

    def store(self, obj: dict[str, Any], namespace: str = "data") -> None:
        resource, namespaced = RESOURCES[obj["kind"]]
        scope = f"/namespaces/{namespace}" if namespaced else ""
        self.objects[f"/api/v1{scope}/{resource}/{obj['metadata']['name']}"] = obj

    def __enter__(self) -> FakeApiServer:
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.http.shutdown()
        self.http.server_close()
