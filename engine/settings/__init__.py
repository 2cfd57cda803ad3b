"""The sections of config/engine.toml, one module each (cascade, gateway, reputation, telemetry), low in the
engine so that engine.config can gather them into EngineSettings while every package reads its own."""
