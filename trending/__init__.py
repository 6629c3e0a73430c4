"""trending: exact windowing for Spark Structured Streaming on Kafka.

The windows as DataFrame functions, from one import (loaded on first use, so ``import
trending`` itself stays cheap and imports no pyspark)::

    from trending import spl_window, temporal_window

See :mod:`trending.library` and ``docs/library.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = [
    "TOPK_SCHEMA",
    "Publication",
    "SensorBatches",
    "SensorMatching",
    "SensorMatchingError",
    "SensorResults",
    "SlidingTopK",
    "SplRunnerError",
    "TemporalColumnsError",
    "TopKBatches",
    "TopKError",
    "configure_spark",
    "publish_exactly_once",
    "spl_window",
    "temporal_window",
]

if TYPE_CHECKING:
    from trending.library import (
        TOPK_SCHEMA,
        Publication,
        SensorBatches,
        SensorMatching,
        SensorMatchingError,
        SensorResults,
        SlidingTopK,
        SplRunnerError,
        TemporalColumnsError,
        TopKBatches,
        TopKError,
        configure_spark,
        publish_exactly_once,
        spl_window,
        temporal_window,
    )


def __getattr__(name: str) -> Any:
    """The library's names, imported from :mod:`trending.library` when first asked for."""
    if name in __all__:
        from trending import library

        value = getattr(library, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'trending' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
