"""Run ``ltrfeat serve`` as a child process on a free loopback port (tests and benchmarks)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A currently free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def served(serve_args, *, startup_timeout: float = 60.0, request_timeout: float = 30.0, env: dict | None = None):
    """Start ``ltrfeat serve SERVE_ARGS --port P`` on 127.0.0.1, wait for ``/healthz``, yield
    ``(proc, client)``; always stop the server with SIGTERM (SIGKILL after 20 s). ``env``: extra
    environment variables for the server (e.g. ``LTRFEAT_SERVE_TOKEN``)."""
    port = free_port()
    cmd = [sys.executable, "-m", "ltrfeat.cli.main", "serve", *map(str, serve_args), "--port", str(port)]
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=request_timeout) as client:
            deadline = time.monotonic() + startup_timeout
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"ltrfeat serve exited: {proc.communicate()[1].decode()[-500:]}")
                with contextlib.suppress(httpx.TransportError):
                    if client.get("/healthz").status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"ltrfeat serve did not become healthy within {startup_timeout:.0f} s")
                time.sleep(0.2)
            yield proc, client
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
