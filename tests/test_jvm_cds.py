"""The suite's class archive (tests/jvm_cds.py) changes how fast a JVM starts, never whether or how it runs."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.jvm_cds import ARCHIVE, submit_opts


def java_version(opts: list[str]) -> tuple[int, str]:
    done = subprocess.run([shutil.which("java") or "java", *opts, "-version"], capture_output=True, text=True,
                          timeout=120)
    return done.returncode, (done.stdout + done.stderr).replace(", sharing", "")


@pytest.mark.skipif(shutil.which("java") is None, reason="no java on PATH")
def test_a_jvm_that_cannot_use_the_archive_runs_as_without_it(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.jsa"
    garbage.write_bytes(bytes(range(256)) * 400)
    unusable = [garbage]
    if ARCHIVE.is_file():
        unusable.append(ARCHIVE)  # made for Spark's classpath; `java -version` has another
    plain = java_version([])
    assert plain[0] == 0
    for archive in unusable:
        assert java_version(submit_opts(archive).split()) == plain, archive
