"""Hostile clients of ``ltrfeat serve`` for the soak (tests/serving/test_serve_soak.py), run in a process of their
own: bodies sent a byte at a time, requests of ~900 KB of words no one has sent before, normalisation bombs. A
light module (no ltrfeat import), so that the process starts at once."""

from __future__ import annotations

import os
import socket
import threading
import time

import httpx

BOMB = "a" + "\u0301\u0316" * 9_999  # 19,999 characters: within serve's default --max-text-chars


def _count(counts: dict, key: str) -> None:
    counts[key] = counts.get(key, 0) + 1


def slow_bodies(port: int, active, done, counts: dict) -> None:
    """30 connections each sending a 100,000-byte body a byte per 0.2 s; one cut off comes back."""

    def connect():
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(
            b"POST /score HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b'Content-Length: 100000\r\n\r\n{"query": "'
        )
        s.setblocking(False)
        return s

    conns: list[socket.socket] = []
    while not done.is_set():
        if not active.is_set():
            for s in conns:
                s.close()
            conns = []
            time.sleep(0.05)
            continue
        conns = conns or [connect() for _ in range(30)]
        for i, s in enumerate(conns):
            try:
                s.send(b"x")
            except OSError:  # cut off by the server: come back
                s.close()
                conns[i] = connect()
                _count(counts, "slow bodies cut off")
        time.sleep(0.2)
    for s in conns:
        s.close()


def unseen_words(n_bytes: int) -> str:
    hexed = os.urandom(n_bytes // 2).hex()
    return " ".join(hexed[i : i + 8] for i in range(0, len(hexed), 8))


def _vocabulary() -> dict:
    return {
        "query": unseen_words(200),
        "candidates": [{"docid": str(i), "title": unseen_words(600), "body": unseen_words(7000)} for i in range(110)],
    }


def _bomb() -> dict:
    return {"query": BOMB, "candidates": [{"docid": "d", "title": BOMB, "body": BOMB}]}


def _posting(body_of, name: str):
    def client(port: int, active, done, counts: dict) -> None:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
            while not done.is_set():
                if active.is_set():
                    _count(counts, f"{name} {http.post('/score', json=body_of()).status_code}")
                else:
                    time.sleep(0.05)

    return client


def attack(port: int, active, done, results) -> None:
    """Attack while ``active`` is set, until ``done``; put the counts of what happened on ``results``."""
    os.nice(10)  # attackers use their own machines' CPU, not the normal client's share of this one
    counts: dict = {}
    clients = (slow_bodies, _posting(_vocabulary, "vocabulary"), _posting(_bomb, "bomb"))
    workers = [threading.Thread(target=c, args=(port, active, done, counts)) for c in clients]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    results.put(counts)
