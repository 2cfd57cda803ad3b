"""Panels of the main window, one concern each; they talk to the engine only through EngineService."""
