"""Quorum's desktop console: PySide6 + qasync on top of the engine.

The only package that knows Qt. Everything it learns about the engine comes through
`console.service.EngineService`, which turns engine events into Qt signals (`sig_<what happened>`).
"""

