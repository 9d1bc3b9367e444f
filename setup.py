"""Every wheel build compiles the bridge jar into the package (``lineage_listener/bridge/lib/``).

The jar is compiled against the Spark jars of the PySpark in the build environment: an isolated build
(``python -m build``, ``pip wheel .``) installs it from ``[build-system] requires``; ``make wheel``
uses the one in ``.venv``. A JDK (``javac``) is a system requirement: without one the wheel build
fails, naming the fix, rather than producing a wheel whose zero-code capture cannot start where no JDK
is. ``LINEAGE_LISTENER_WHEEL_WITHOUT_JAR=1`` builds a jar-less wheel on purpose (it then compiles the jar
on first use, as an sdist or a checkout does). Editable installs and sdists compile nothing. The jar is
never committed.
"""
from __future__ import annotations

import importlib.util
import logging
import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.errors import SetupError

#: Set to 1 to build a wheel without the jar on purpose (zero-code capture then needs a JDK at run time).
WITHOUT_JAR = "LINEAGE_LISTENER_WHEEL_WITHOUT_JAR"


class BuildPyWithJar(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        target = Path(self.build_lib) / "lineage_listener" / "bridge" / "lib" / "lineage-bridge.jar"
        if os.environ.get(WITHOUT_JAR) == "1":
            target.unlink(missing_ok=True)  # not one left in build/ by an earlier build
            logging.getLogger(__name__).warning("%s=1: building a wheel without the bridge jar", WITHOUT_JAR)
            return
        spec = importlib.util.spec_from_file_location("_bridge_jar", Path(__file__).parent / "lineage_listener" / "jar.py")
        jar = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = jar  # dataclasses look their module up
        spec.loader.exec_module(jar)
        try:
            jar.build_into(target)
        except jar.BridgeBuildError as exc:
            raise SetupError(f"cannot build the bridge jar that every lineage-listener wheel carries: {exc}\n"
                             "A wheel build needs a JDK 8+ (javac on PATH or in $JAVA_HOME) and PySpark (an "
                             "isolated build installs it). To build a wheel without the jar on purpose, set "
                             f"{WITHOUT_JAR}=1.") from None
        logging.getLogger(__name__).warning("bundled the bridge jar: %s", target)


setup(cmdclass={"build_py": BuildPyWithJar})
