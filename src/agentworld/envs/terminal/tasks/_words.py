"""Vocabulary the task templates draw from, so seeds vary names, numbers and contents."""

from __future__ import annotations

import random

NAMES = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory", "oscar"]
CITIES = ["Lisbon", "Oslo", "Kyoto", "Lima", "Nairobi", "Quebec", "Perth", "Tallinn", "Seville", "Hanoi"]
FRUITS = ["apple", "banana", "cherry", "date", "fig", "grape", "kiwi", "lemon", "mango", "pear"]
PROJECTS = ["atlas", "beacon", "comet", "delta", "ember", "falcon", "garnet", "harbor", "iris", "juniper"]
LEVELS = ["INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"]
SERVICES = ["api", "auth", "billing", "cache", "db", "mailer", "queue", "search"]
EXTS = [".txt", ".log", ".csv", ".md", ".py", ".json"]


def log_lines(rng: random.Random, n: int, day: str = "2024-03-14") -> list[str]:
    out = []
    for i in range(n):
        h, m, s = 8 + i * 10 // n, rng.randrange(60), rng.randrange(60)
        lvl, svc = rng.choice(LEVELS), rng.choice(SERVICES)
        msg = {"ERROR": f"request failed code={rng.choice([500, 502, 503])}",
               "WARN": f"slow response {rng.randrange(800, 3000)}ms"}.get(lvl, f"handled request id={rng.randrange(1000, 9999)}")
        out.append(f"{day} {h:02d}:{m:02d}:{s:02d} {lvl} [{svc}] {msg}")
    return out


def csv_rows(rng: random.Random, n: int) -> list[tuple[str, str, int]]:
    return [(rng.choice(NAMES), rng.choice(CITIES), rng.randrange(10, 500)) for _ in range(n)]


def ident(rng: random.Random) -> str:
    return f"{rng.choice(PROJECTS)}{rng.randrange(2, 99)}"
