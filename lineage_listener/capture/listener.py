"""The Python ``QueryExecutionListener`` Spark calls through py4j.

It runs on Spark's listener-bus thread: it reads an :class:`Envelope` and hands
it to the capture thread, and never lets an exception escape into Spark.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any
from lineage_listener import redact

if TYPE_CHECKING:  # pragma: no cover
    from lineage_listener.capture.pipeline import Capture

log = redact.logger(__name__)


class PlanListener:
    """Implements ``org.apache.spark.sql.util.QueryExecutionListener`` for py4j."""

    def __init__(self, capture: "Capture") -> None:
        self.capture = capture

    def onSuccess(self, funcName: str, qe: Any, durationNs: int) -> None:  # noqa: N802,N803 - Java names
        self.capture.on_success(funcName, qe, durationNs)

    def onFailure(self, funcName: str, qe: Any, exception: Any) -> None:  # noqa: N802,N803
        self.capture.on_failure(funcName, qe, exception)

    def toString(self) -> str:  # noqa: N802 - py4j/Java may ask
        return f"lineage_listener.PlanListener({self.capture.store})"

    class Java:
        implements = ["org.apache.spark.sql.util.QueryExecutionListener"]
