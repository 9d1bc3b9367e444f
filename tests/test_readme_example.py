"""The README's in-code example runs as written, and its SQL prints what the README shows."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _block(after: str, language: str) -> str:
    start = README.index(after)
    return re.search(rf"```{language}\n(.*?)```", README[start:], flags=re.S).group(1)


def test_the_readme_example_runs_and_prints_what_it_shows(spark, tmp_path):
    store = tmp_path / "lineage.duckdb"
    code = _block("Or in code, on a live session", "python").replace('store="lineage.duckdb"', f'store="{store}"')
    try:
        exec(compile(code, "README.md", "exec"), {"spark": spark})  # noqa: S102 - the README's own code
    finally:
        for table in ("scores", "users"):
            spark.sql(f"DROP TABLE IF EXISTS {table}")
    shown = _block("In SQL, after the job above", "").strip().splitlines()
    command = " ".join(line.strip() for line in shown if not re.match(r"^(target_column|-|email_hash|name |score|"
                                                                      r"uid|NULL|\(5 rows)", line))
    sql = re.search(r'"(SELECT .*)"', command).group(1)
    done = subprocess.run([sys.executable, "-m", "lineage_listener", "sql", "--store", str(store), sql],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 0, done.stderr
    expected = shown[shown.index(next(line for line in shown if line.startswith("target_column"))):]
    assert done.stdout.strip().splitlines() == expected
