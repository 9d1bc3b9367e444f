"""Wheel builds compile the bridge jar into the package (``lineage_listener/bridge/lib/``).

Needs a JDK and PySpark in the build environment (``pip wheel --no-build-isolation .``
or ``make wheel``). Without them the wheel is built without the jar and the package
compiles it on first use instead, as from an sdist. The jar is never committed.
"""
from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithJar(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        target = Path(self.build_lib) / "lineage_listener" / "bridge" / "lib" / "lineage-bridge.jar"
        spec = importlib.util.spec_from_file_location("_bridge_jar", Path(__file__).parent / "lineage_listener"
                                                      / "bridge" / "jar.py")
        jar = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = jar  # dataclasses look their module up
        spec.loader.exec_module(jar)
        try:
            jar.build_into(target)
            logging.getLogger(__name__).warning("bundled the bridge jar: %s", target)
        except Exception as exc:  # noqa: BLE001 - no JDK or no PySpark here: the package builds it at run time
            logging.getLogger(__name__).warning("wheel without a prebuilt bridge jar (%s)", exc)


setup(cmdclass={"build_py": BuildPyWithJar})
