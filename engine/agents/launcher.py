"""Starts the fleet's built-in agents as real processes on 127.0.0.1 and stops them again.

Each agent is its own process (so one crash or one kill takes down one agent only), started with
subprocess.Popen and watched by a reader thread: that works under any asyncio loop, qasync's
included. Children also get SIGTERM if this process dies (see serve._die_with_parent).

Given a Keyring, each agent gets a key for this run (its configured one, else a new random one) in its
environment, never on its command line; no child inherits the variables that hold other agents' keys.
"""
from __future__ import annotations

import asyncio
import ipaddress
import os
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..config import PROJECT_ROOT, FleetConfig
from ..errors import ConfigError, FleetError
from ..types import AgentSpec, AgentState
from .auth import CHILD_KEY_ENV, Keyring
from .serve import READY_PREFIX

StateCallback = Callable[[str, AgentState, str, str], None]   # agent_id, state, url, detail


@dataclass
class _Child:
    spec: AgentSpec
    process: subprocess.Popen
    log_path: Path
    url: str = ""
    ready: asyncio.Future | None = None


def agent_url(spec: AgentSpec, port: int) -> str:
    """Where the engine reaches a built-in agent: its host (loopback for a wildcard bind), https with TLS."""
    host = spec.security.host.strip("[]")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None and address.is_unspecified:      # 0.0.0.0 or ::: every interface, loopback included
        host = "::1" if address.version == 6 else "127.0.0.1"
        address = ipaddress.ip_address(host)
    if address is not None and address.version == 6:
        host = f"[{host}]"
    return f"{'https' if spec.security.tls_cert else 'http'}://{host}:{port}"


class FleetLauncher:
    def __init__(self, fleet: FleetConfig, cache_dir: Path, on_state: StateCallback | None = None,
                 ready_timeout_s: float = 300.0, keyring: Keyring | None = None) -> None:
        self.fleet = fleet
        self.keyring = keyring     # None: agents run without keys (unsigned, as before keys existed)
        self.cache_dir = Path(cache_dir)
        self.on_state = on_state or (lambda *args: None)
        self.ready_timeout_s = ready_timeout_s
        self._children: dict[str, _Child] = {}
        self._threads: list[threading.Thread] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = False

    def builtin_agents(self) -> list[AgentSpec]:
        return [a for a in self.fleet.agents if a.builtin and a.enabled]

    async def start(self) -> dict[str, str]:
        """Spawns every enabled built-in agent; returns {agent_id: url} of those that came up in time.
        After stop() it starts them all again, as new processes on new ports."""
        self._loop = asyncio.get_running_loop()
        self._stopping = False
        self._children, self._threads = {}, []     # stop() joined the old watchers; their children are gone
        log_dir = self.cache_dir / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        # One compute thread per agent: several agents share two cores, and idle OpenMP workers spin.
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
               "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        for name in {CHILD_KEY_ENV} | {a.security.key_env for a in self.fleet.agents if a.security.key_env}:
            env.pop(name, None)     # an agent must not find another agent's key in what it inherits
        for spec in self.builtin_agents():
            log_path = log_dir / f"{spec.id}.log"
            try:
                key = self.keyring.key_for_launch(self.fleet, spec) if self.keyring is not None else None
                child_env = env if key is None else {**env, CHILD_KEY_ENV: key.hex()}
            except ConfigError:
                await self.stop()
                raise
            command = [sys.executable, "-m", "engine.agents.serve", "--fleet", str(self.fleet.path),
                       "--agent", spec.id, "--corpus", str(self.fleet.corpus_dir), "--cache-dir", str(self.cache_dir)]
            try:
                with log_path.open("w") as log:
                    process = subprocess.Popen(command, cwd=PROJECT_ROOT, env=child_env, stdin=subprocess.DEVNULL,
                                               stdout=subprocess.PIPE, stderr=log, text=True)
            except OSError as exc:
                await self.stop()
                raise FleetError(f"cannot start agent {spec.id}: {exc}") from exc
            child = _Child(spec, process, log_path, ready=self._loop.create_future())
            self._children[spec.id] = child
            self.on_state(spec.id, AgentState.STARTING, "", f"pid {process.pid}")
            thread = threading.Thread(target=self._watch, args=(child,), name=f"watch-{spec.id}", daemon=True)
            thread.start()
            self._threads.append(thread)
        pending = [c.ready for c in self._children.values() if c.ready]
        if pending:
            await asyncio.wait(pending, timeout=self.ready_timeout_s)
        for child in self._children.values():
            if not child.url and child.process.poll() is None:
                self.on_state(child.spec.id, AgentState.STARTING, "", f"not ready after {self.ready_timeout_s:.0f} s")
        return self.urls()

    def urls(self) -> dict[str, str]:
        return {agent_id: c.url for agent_id, c in self._children.items() if c.url and c.process.poll() is None}

    def pid(self, agent_id: str) -> int:
        return self._children[agent_id].process.pid

    def _report(self, child: _Child, state: AgentState, detail: str) -> None:
        def deliver() -> None:
            if child.ready and not child.ready.done():
                child.ready.set_result(state)
            if self._children.get(child.spec.id) is child:     # not a process from before a restart
                self.on_state(child.spec.id, state, child.url, detail)
        loop = self._loop
        if loop and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(deliver)
            except RuntimeError:
                pass   # the loop closed while the process exited: nobody left to tell

    def _watch(self, child: _Child) -> None:
        assert child.process.stdout is not None
        for line in child.process.stdout:
            if line.startswith(READY_PREFIX):
                child.url = agent_url(child.spec, int(line.split()[1]))
                self._report(child, AgentState.UP, child.url)
        code = child.process.wait()
        if not self._stopping:
            self._report(child, AgentState.DOWN, f"exited with code {code}: {self._log_tail(child)}")

    @staticmethod
    def _log_tail(child: _Child) -> str:
        try:
            lines = deque(child.log_path.read_text(errors="replace").splitlines(), maxlen=3)
        except OSError:
            return "no log"
        return " | ".join(lines) or "no output"

    async def stop(self, grace_s: float = 5.0, on_exit: Callable[[str], None] | None = None) -> None:
        """Terminates every agent, waits up to grace_s, then kills what is left; on_exit(agent_id) as each
        one's process is gone."""
        self._stopping = True
        children = list(self._children.values())
        for child in children:
            if child.process.poll() is None:
                child.process.terminate()
        deadline = time.monotonic() + grace_s
        for child in children:
            while child.process.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            if child.process.poll() is None:
                child.process.kill()
                child.process.wait()
            if child.process.stdout:
                child.process.stdout.close()
            if on_exit is not None:
                on_exit(child.spec.id)
        for thread in self._threads:
            thread.join(timeout=1.0)
