"""Every wheel carries the bridge jar; installed where no javac is reachable, zero-code capture works.

The wheel is built as release pipelines build it: ``python -m build``, isolated, an sdist and
a wheel from that sdist, with the Spark jars to compile against from ``[build-system] requires``.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import textwrap
import zipfile
from pathlib import Path

import duckdb
import pytest

ROOT = Path(__file__).resolve().parents[1]
JAR = "lineage_listener/bridge/lib/lineage-bridge.jar"


def no_jdk_path(tmp: Path) -> tuple[str, Path]:
    """(PATH, JAVA_HOME) with a java launcher but no javac: every tool of /usr/bin and /bin except the JDK's."""
    java = Path(os.path.realpath(shutil.which("java")))
    home = tmp / "jre"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").symlink_to(java)
    tools = tmp / "tools"
    tools.mkdir()
    jdk_only = {"javac", "jar", "jarsigner", "javadoc", "javap", "jshell", "jdeps", "jlink", "jmod", "jpackage"}
    for d in ("/usr/local/bin", "/usr/bin", "/bin"):
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if name not in jdk_only and not (tools / name).exists():
                (tools / name).symlink_to(Path(d) / name)
    return f"{home / 'bin'}:{tools}", home


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """One isolated ``python -m build`` of this checkout (sdist, then the wheel from it), for every test here."""
    out = tmp_path_factory.mktemp("dist")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME", "VIRTUAL_ENV")}
    proc = subprocess.run([sys.executable, "-m", "build", "-o", str(out), str(ROOT)], capture_output=True, text=True,
                          timeout=900, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "`project.license` as a TOML table is deprecated" not in proc.stdout + proc.stderr
    return out


@pytest.fixture(scope="module")
def wheel(dist) -> Path:
    (whl,) = dist.glob("lineage_listener-*.whl")
    return whl


def test_the_wheel_ships_the_jar_and_the_ui(wheel, dist):
    names = zipfile.ZipFile(wheel).namelist()
    assert JAR in names
    assert "lineage_listener/server/static/vendor/cytoscape.min.js" in names
    assert "lineage_listener/server/static/views/column.js" in names
    assert "lineage_listener/store/schema.sql" in names
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: Apache-2.0" in metadata
    (sdist,) = dist.glob("lineage_listener-*.tar.gz")  # jar-less, but with the sources the wheel compiles
    with tarfile.open(sdist) as tf:
        members = tf.getnames()
    assert any(m.endswith("jvm_bridge/src/main/java/lineage/bridge/LineageBridgeListener.java") for m in members)
    assert not [m for m in members if m.endswith(".jar")]
    tracked = subprocess.run(["git", "ls-files", "*.jar"], cwd=ROOT, capture_output=True, text=True).stdout
    assert tracked == ""  # built, never committed


def test_a_wheel_build_without_a_jdk_fails_naming_the_fix(tmp_path):
    path, java_home = no_jdk_path(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env.update(PATH=path, JAVA_HOME=str(java_home))
    out = tmp_path / "dist"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q",
                           "-w", str(out), str(ROOT)], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode != 0
    assert "cannot build the bridge jar" in proc.stdout + proc.stderr
    assert "javac not found" in proc.stdout + proc.stderr
    assert not list(out.glob("*.whl"))
    env["LINEAGE_LISTENER_WHEEL_WITHOUT_JAR"] = "1"  # on purpose: a wheel, without the jar
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q",
                           "-w", str(out), str(ROOT)], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (whl,) = out.glob("lineage_listener-*.whl")
    assert JAR not in zipfile.ZipFile(whl).namelist()


def test_installed_wheel_captures_with_no_jdk(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(venv)],
                   check=True)
    py = venv / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    with zipfile.ZipFile(wheel) as zf:  # what pip does with a pure wheel (no pip in this venv: no network)
        zf.extractall(site)
    # the dependencies (pyspark, duckdb, ...) come from the test environment, not from a download
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    path, java_home = no_jdk_path(tmp_path)
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME", "PYSPARK_GATEWAY_PORT",
                                                            "PYSPARK_GATEWAY_SECRET")}
    env.update(PATH=f"{venv / 'bin'}:{path}", JAVA_HOME=str(java_home), LINEAGE_LISTENER_CACHE=str(cache),
               PYSPARK_PYTHON=str(py), PYSPARK_DRIVER_PYTHON=str(py))
    assert subprocess.run(["sh", "-c", "command -v javac"], env=env, capture_output=True).returncode != 0
    store = tmp_path / "lineage.duckdb"
    conf = subprocess.run([str(py), "-m", "lineage_listener", "spark-conf", "--store", str(store)], env=env,
                          capture_output=True, text=True, cwd=tmp_path)
    assert conf.returncode == 0, conf.stderr
    assert str(site / JAR) in conf.stdout  # the wheel's jar, nothing compiled
    job = tmp_path / "job.py"
    job.write_text(textwrap.dedent(f"""
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.appName("wheel_job").getOrCreate()
        spark.range(3).selectExpr("id", "id * 2 AS twice").write.mode("overwrite").parquet({str(tmp_path / 'out')!r})
        spark.stop()
    """))
    submit = Path(sysconfig.get_paths()["scripts"]) / "spark-submit"
    done = subprocess.run([str(submit), "--master", "local[1]", "--conf", "spark.ui.enabled=false",
                           *conf.stdout.split(), str(job)], env=env, capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    with duckdb.connect(str(store), read_only=True) as con:
        got = set(con.execute("SELECT target_column, source_column, transform FROM column_lineage "
                              "WHERE target_dataset LIKE '%/out'").fetchall())
    assert got == {("id", "id", "identity"), ("twice", "id", "derived")}
    assert not cache.exists() or not any(cache.iterdir())  # no jar was built on the test's machine
