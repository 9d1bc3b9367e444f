"""The bridge jar build and the spark-submit arguments (no Spark job is run here)."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from lineage_listener.bridge import LISTENER_CLASS
from lineage_listener import jar as jarmod
from lineage_listener.bridge.submit import spark_conf
from lineage_listener.cli import main as cli_main

REPO = Path(__file__).resolve().parent.parent
EXPECTED_CLASSES = {"lineage/bridge/LineageBridgeListener.class", "lineage/bridge/Worker.class",
                    "lineage/bridge/Relay.class", "lineage/bridge/EntryPoint.class"}


def _classes(path: Path) -> set[str]:
    with zipfile.ZipFile(path) as zf:
        assert zf.testzip() is None
        return set(zf.namelist())


def test_sources_are_found_in_the_checkout() -> None:
    root = jarmod.find_sources()
    assert (root / "lineage" / "bridge" / "LineageBridgeListener.java").is_file()


def test_cache_key_is_spark_version_and_source_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LINEAGE_LISTENER_CACHE", str(tmp_path))
    src = tmp_path / "src"
    (src / "a").mkdir(parents=True)
    (src / "a" / "X.java").write_text("class X {}")
    jars = jarmod.SparkJars(directory=tmp_path, version="9.9.9")
    first = jarmod.jar_path(src, jars)
    assert first.parent == tmp_path and "spark9.9.9" in first.name
    assert jarmod.jar_path(src, jars) == first
    (src / "a" / "X.java").write_text("class X { int y; }")
    assert jarmod.jar_path(src, jars) != first


def test_concurrent_builds_leave_one_valid_jar(tmp_path: Path) -> None:
    env = {**os.environ, "LINEAGE_LISTENER_CACHE": str(tmp_path), "PYTHONPATH": str(REPO)}
    code = "from lineage_listener.jar import bridge_jar; print(bridge_jar(rebuild=True))"
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert outs[0] == outs[1]
    assert EXPECTED_CLASSES <= _classes(Path(outs[0]))
    assert [p.name for p in tmp_path.iterdir()] == [Path(outs[0]).name]  # no temp leftovers
    # cached now: no rebuild, same file
    mtime = Path(outs[0]).stat().st_mtime_ns
    os.environ["LINEAGE_LISTENER_CACHE"] = str(tmp_path)
    try:
        assert jarmod.bridge_jar() == Path(outs[0]) and Path(outs[0]).stat().st_mtime_ns == mtime
    finally:
        del os.environ["LINEAGE_LISTENER_CACHE"]


def test_spark_conf_names_listener_store_and_python(tmp_path: Path) -> None:
    conf = spark_conf(tmp_path / "x" / ".." / "lineage.duckdb")
    assert conf["spark.sql.queryExecutionListeners"] == LISTENER_CLASS
    assert conf["spark.lineage.store"] == str((tmp_path / "lineage.duckdb").resolve())
    assert conf["spark.lineage.python"] == sys.executable


def test_cli_prints_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["spark-conf", "--store", str(tmp_path / "l.duckdb")]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    args = out.split()
    assert args[0] == "--jars" and args[1].endswith(".jar") and Path(args[1]).is_file()
    assert f"spark.sql.queryExecutionListeners={LISTENER_CLASS}" in args
    assert f"spark.lineage.store={tmp_path / 'l.duckdb'}" in args
    assert cli_main(["bridge-jar"]) == 0
    assert capsys.readouterr().out.strip() == args[1]
