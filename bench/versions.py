"""Questions asked of two versions of the code in turn, their answers compared column for column.

The query benches (``query_bench.py``, ``labels_bench.py``, ``history_bench.py``) time each question
in a worker process per version of the package: this checkout's, and with ``--before CHECKOUT``
another checkout's (the code before a change). Each question goes to every worker in turn, the
order turned from one question to the next, so the load of a shared machine falls on both alike;
each answer is compared with the first version's, column for column, and a bench says which
columns differ and fails when any does.

A worker is this file run as a script with a checkout and a store: it imports that checkout's
``lineage_listener`` and answers questions read as JSON lines on stdin, one JSON line each on
stdout, timing only the question itself (wall and CPU time of the process)::

    {"ask": "upstream", "dataset": "spark_catalog.db.t", "column": "c", "depth": 10, "since": null}
    {"ask": "labels", "dataset": "spark_catalog.db.t", "influence": true}
    {"session": true}        # questions from now on share one store.session() (false: end it)

>>> canonical({"b": 1, "a": [datetime(2026, 1, 2), None]})
'{"a": ["2026-01-02 00:00:00", null], "b": 1}'
>>> differing({"columns": [{"dataset": "t", "column": "a", "labels": []}]},
...           {"columns": [{"dataset": "t", "column": "a", "labels": [{"label": "pii"}]}]})
['t.a']
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def canonical(answer: Any) -> str:
    """An answer as one JSON text: keys sorted, times and other values as their ``str``."""
    return json.dumps(answer, sort_keys=True, default=str)


def differing(a: Any, b: Any) -> list[str]:
    """The columns whose part of two answers differ (``dataset.column``; a graph's edges by their
    target column), or ``["*"]`` when what differs is no column's."""
    def parts(answer: Any) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        if isinstance(answer, dict) and "columns" in answer:
            for c in answer["columns"]:
                out.setdefault(f"{c['dataset']}.{c['column']}", []).append(canonical(c))
        elif isinstance(answer, dict) and "nodes" in answer:
            for n in answer["nodes"]:
                out.setdefault(f"{n['dataset']}.{n['column']}", []).append(canonical(n))
            for e in answer["edges"]:
                out.setdefault(f"{e['target']['dataset']}.{e['target']['column']}", []).append(canonical(e))
            rest = {k: v for k, v in answer.items() if k not in ("nodes", "edges")}
            out["*"] = [canonical(rest)]
        else:
            out["*"] = [canonical(answer)]
        return {k: sorted(v) for k, v in out.items()}
    pa, pb = parts(a), parts(b)
    return sorted(k for k in set(pa) | set(pb) if pa.get(k) != pb.get(k))


class Worker:
    """A process answering questions with the package of checkout ``code`` over ``store``."""

    def __init__(self, name: str, code: Path, store: str | os.PathLike) -> None:
        self.name, self.code = name, Path(code).absolute()
        env = {**os.environ, "PYTHONPATH": str(self.code)}
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), str(self.code), str(store)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def ask(self, question: dict[str, Any]) -> dict[str, Any]:
        """``{"ms", "cpu_ms", "answer"}`` (the answer as data), or ``{"error"}``."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(question) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.name} ({self.code}) ended")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(60)


class Versions:
    """One worker per version; :meth:`ask` puts a question to each in turn and compares the answers.

    ``before``: another checkout, answering beside this one (None: this checkout only)."""

    def __init__(self, store: str | os.PathLike, before: Path | None = None) -> None:
        self.workers = [Worker("now", REPO, store)]
        if before is not None:
            self.workers.append(Worker("before", Path(before), store))
        self.asked = 0
        self.mismatches: list[tuple[dict, list[str]]] = []

    @property
    def names(self) -> list[str]:
        return [w.name for w in self.workers]

    def ask(self, question: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """Per version name, its reply (``ms``, ``cpu_ms``, ``answer``); the order turns each call."""
        order = self.workers if self.asked % 2 == 0 else self.workers[::-1]
        self.asked += 1
        replies = {w.name: w.ask(question) for w in order}
        for name, reply in replies.items():
            if "error" in reply:
                raise RuntimeError(f"{name}: {question}: {reply['error']}")
        first = replies[self.workers[0].name]["answer"]
        for w in self.workers[1:]:
            other = replies[w.name]["answer"]
            if canonical(other) != canonical(first):
                cols = differing(first, other)
                self.mismatches.append((question, cols))
                print(f"ANSWERS DIFFER ({w.name} against {self.workers[0].name}) for {json.dumps(question)}: "
                      f"{', '.join(cols[:10])}{' ...' if len(cols) > 10 else ''}", flush=True)
        return replies

    def session(self, on: bool) -> None:
        for w in self.workers:
            w.ask({"session": on})

    def verdict(self) -> str:
        """One line: how many questions were compared and whether every answer was the same."""
        if len(self.workers) < 2:
            return f"{self.asked} questions, one version (--before CHECKOUT compares answers)"
        if self.mismatches:
            return f"ANSWERS DIFFER on {len(self.mismatches)} of {self.asked} questions"
        return f"answers the same, column for column, on all {self.asked} questions"

    def close(self) -> None:
        for w in self.workers:
            w.close()


# -- the worker -------------------------------------------------------------------------------------


def _graph(g: Any) -> dict[str, Any]:
    """A graph answer as the REST API gives it, each edge with every stored record of its step."""
    from lineage_listener.query.graph import graph_data

    data = graph_data(g)
    records = {(u, v): sorted((canonical(r) for r in d.get("records", ())))
               for u, v, d in g.edges(data=True)}
    for e in data["edges"]:
        key = ((e["source"]["dataset"], e["source"]["column"]), (e["target"]["dataset"], e["target"]["column"]))
        e["records"] = records.get(key, [])
    return data


def _serve(code: str, path: str) -> None:
    sys.path.insert(0, code)
    from lineage_listener.govern.answers import column_labels
    from lineage_listener.query import open_store

    store = open_store(path)
    session = None
    for line in sys.stdin:
        q = json.loads(line)
        try:
            if "session" in q:
                if session is not None:
                    session.__exit__(None, None, None)
                    session = None
                if q["session"]:
                    session = store.session()
                    session.__enter__()
                print(json.dumps({"ok": True}), flush=True)
                continue
            t0, c0 = time.perf_counter(), time.process_time()
            if q["ask"] == "labels":
                answer: Any = column_labels(store, q["dataset"], q.get("column"), influence=q.get("influence", True))
            else:
                g = getattr(store, q["ask"])(q["dataset"], q["column"], depth=q.get("depth"), since=q.get("since"),
                                             until=q.get("until"))
                answer = g
            ms, cpu = 1000 * (time.perf_counter() - t0), 1000 * (time.process_time() - c0)
            if q["ask"] != "labels":
                answer = _graph(answer)
            print(json.dumps({"ms": ms, "cpu_ms": cpu, "answer": json.loads(canonical(answer))}), flush=True)
        except Exception as exc:  # noqa: BLE001 - the bench says which question failed
            print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)


if __name__ == "__main__":
    _serve(sys.argv[1], sys.argv[2])
