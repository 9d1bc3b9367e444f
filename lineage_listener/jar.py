"""The bridge jar: shipped in the wheel, else built from ``jvm_bridge`` sources against the running
PySpark and cached.

A wheel carries ``lineage_listener/bridge/lib/lineage-bridge.jar``, compiled when the
wheel was built (``setup.py``), for Java 8+ bytecode so it loads on Spark 3.5 and 4.x;
then no JDK is needed. An sdist or a checkout builds it on first use with ``javac``.

>>> from lineage_listener.jar import bridge_jar
>>> bridge_jar()                                   # doctest: +SKIP
PosixPath('/home/me/.cache/lineage-listener/lineage-bridge-spark4.3.0-1a2b3c4d5e6f.jar')

The cache key is the Spark version plus a hash of the sources, so a new
PySpark or an edited source builds a new jar. Builds go to a temporary
directory and are renamed into place, so concurrent builds never corrupt it.
"""
from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

#: Bump when the way the jar is built changes (it is part of the cache key).
BUILD_VERSION = "2"
_PACKAGE_DIR = Path(__file__).resolve().parent / "bridge"  # its Java sources and the shipped jar


class BridgeBuildError(Exception):
    """The bridge jar cannot be built: no javac, no PySpark jars, no sources, or a compile error."""


@dataclass(frozen=True)
class SparkJars:
    """Where the Spark jars to compile against live, and which Spark they are."""

    directory: Path
    version: str


def find_sources() -> Path:
    """The Java source root: shipped in the package, else ``<repo>/jvm_bridge`` of a checkout."""
    candidates = [
        _PACKAGE_DIR / "java",                                   # wheel (package data) or symlink
        _PACKAGE_DIR.parent.parent / "jvm_bridge" / "src" / "main" / "java",  # editable checkout
    ]
    for root in candidates:
        if any(root.rglob("*.java")):
            return root
    raise BridgeBuildError("bridge Java sources not found (looked in "
                           + ", ".join(str(c) for c in candidates) + ")")


def spark_jars() -> SparkJars:
    """The jars of the PySpark this Python runs (``<pyspark>/jars``), found without importing PySpark
    (a second of start-up for a command that only prints a path)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise BridgeBuildError("pyspark is not installed in this Python")
    package = Path(next(iter(spec.submodule_search_locations))).resolve()
    directory = package / "jars"
    if not directory.is_dir():
        home = os.environ.get("SPARK_HOME")
        if home and (Path(home) / "jars").is_dir():
            directory = Path(home) / "jars"
        else:
            raise BridgeBuildError(f"no Spark jars at {directory} (and SPARK_HOME has none)")
    return SparkJars(directory=directory, version=_pyspark_version(package))


def _pyspark_version(package: Path) -> str:
    """PySpark's ``__version__``, read from its ``version.py`` (imported only when that cannot be read)."""
    try:
        found = re.search(r"""^__version__\s*(?::\s*str\s*)?=\s*["']([^"']+)["']""",
                          (package / "version.py").read_text(), re.M)
    except OSError:
        found = None
    if found:
        return found.group(1)
    import pyspark

    return pyspark.__version__


def cache_dir() -> Path:
    """``$LINEAGE_LISTENER_CACHE``, else ``$XDG_CACHE_HOME/lineage-listener``, else ``~/.cache/lineage-listener``."""
    explicit = os.environ.get("LINEAGE_LISTENER_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lineage-listener"


def source_hash(root: Path) -> str:
    """A short hash of every ``.java`` file under ``root`` (paths and contents)."""
    digest = hashlib.sha256(BUILD_VERSION.encode())
    for path in sorted(root.rglob("*.java")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def jar_path(sources: Path | None = None, jars: SparkJars | None = None) -> Path:
    """Where the jar for these sources and this Spark lives in the cache (built or not)."""
    sources = sources or find_sources()
    jars = jars or spark_jars()
    return cache_dir() / f"lineage-bridge-spark{jars.version}-{source_hash(sources)}.jar"


#: Where a wheel keeps the jar it was built with.
SHIPPED = _PACKAGE_DIR / "lib" / "lineage-bridge.jar"

#: Bytecode level: Java 8, the oldest runtime Spark 3.5 supports (Spark 4 needs 17).
RELEASE = "8"


def bridge_jar(rebuild: bool = False) -> Path:
    """The path of the bridge jar: the wheel's, else a cached build (building it first if needed)."""
    if SHIPPED.is_file() and not rebuild:
        return SHIPPED
    sources, jars = find_sources(), spark_jars()
    target = jar_path(sources, jars)
    if target.is_file() and not rebuild:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    _build(sources, jars, target)
    return target


def _javac() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").is_file():
        return str(Path(home) / "bin" / "javac")
    found = shutil.which("javac")
    if not found:
        raise BridgeBuildError("javac not found, and this installation has no prebuilt bridge jar (it came from "
                               "an sdist or a source checkout): install the lineage-listener wheel, or a JDK "
                               "(a JRE is not enough) and set JAVA_HOME")
    return found


def build_into(target: Path) -> Path:
    """Compile the sources against this Python's PySpark into ``target`` (the wheel build uses it)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    _build(find_sources(), spark_jars(), target)
    return target


def _build(sources: Path, jars: SparkJars, target: Path) -> None:
    log.info("building %s from %s against %s", target.name, sources, jars.directory)
    with tempfile.TemporaryDirectory(prefix=".build-", dir=target.parent) as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        files = [str(p) for p in sorted(sources.rglob("*.java"))]
        cmd = [_javac(), "--release", RELEASE, "-nowarn", "-encoding", "UTF-8",
               "-cp", str(jars.directory / "*"), "-d", str(classes), *files]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise BridgeBuildError(f"javac failed ({done.returncode}):\n{done.stderr.strip()}")
        partial = Path(tmp) / "bridge.jar"
        _write_jar(classes, partial)
        os.replace(partial, target)  # atomic: readers see the old jar, the new one, or none


def _write_jar(classes: Path, out: Path) -> None:
    manifest = "Manifest-Version: 1.0\r\nCreated-By: lineage-listener\r\n\r\n"
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("META-INF/MANIFEST.MF", manifest)
        for path in sorted(classes.rglob("*.class")):
            zf.write(path, path.relative_to(classes).as_posix())
