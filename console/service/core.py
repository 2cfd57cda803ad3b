"""The task-and-error core every feature adapter of EngineService shares.

It owns the engine's phase, the running tasks (strong references, so none is garbage-collected
mid-flight) and the one error path: every failure, expected or not, goes through `report_error`, which
logs it and emits sig_error. Adapters ask `require_ready` before touching the engine and run their
coroutines through `spawn` and `attempt`, so each adapter holds only what its feature does.
"""
from __future__ import annotations

import asyncio
import enum
import logging
import os
from typing import Any, Awaitable, Callable, Coroutine, TypeVar

from PySide6.QtCore import QObject, Signal

from engine import Engine, InputError, QuorumError

log = logging.getLogger("console.service")
T = TypeVar("T")
Refused = Callable[[str], None]


class Phase(enum.Enum):
    IDLE = "idle"            # constructed, start() not called yet
    STARTING = "starting"    # the fleet is coming up
    READY = "ready"          # questions are accepted
    FAILED = "failed"        # start failed; only shutdown makes sense
    STOPPING = "stopping"    # shutdown under way: no new questions
    STOPPED = "stopped"


class Attempt(enum.Enum):
    """How an adapter's call ended, when the result alone cannot say."""
    DONE = "done"
    REFUSED = "refused"      # the engine said no (InputError): the operator's form shows why
    FAILED = "failed"        # anything else: logged with its traceback


class ServiceCore(QObject):
    sig_error = Signal(str)                    # a message an operator can read

    def __init__(self, engine: Engine, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.engine = engine
        self.phase = Phase.IDLE
        self.tasks: set[asyncio.Task] = set()
        self.operator = os.environ.get("USER") or "operator"    # who the console's decisions are recorded as

    @property
    def ready(self) -> bool:
        return self.phase is Phase.READY

    @property
    def reads_only(self) -> bool:
        """A viewer's desk on a team store (Engine.read_only): it shows the store, and asks and decides nothing."""
        return self.phase is Phase.READY and self.engine.read_only

    def viewer_text(self) -> str:
        return (f"Signed in as {self.operator}, a viewer: this desk reads the team store as it changes; asking, "
                "deciding, quarantining and acknowledging are for an operator's login")

    def require_ready(self, what: str, refused: Refused | None = None, *, quiet: bool = False) -> bool:
        """True when the engine takes work. Otherwise says "<what> while the engine is <phase>" to `refused`
        and (unless quiet: a background reload that simply waits for sig_ready) to sig_error."""
        if self.phase is Phase.READY:
            return True
        if quiet:
            return False
        message = f"{what} while the engine is {self.phase.value}"
        if refused is not None:
            refused(message)
        self.report_error(message)
        return False

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self.tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    async def attempt(self, call: Callable[[], Awaitable[T]], *, context: str, refused: Refused | None = None,
                      refusal_prefix: str = "", announce_refusal: bool = True) -> tuple[Attempt, T | None]:
        """Runs one engine call. A refusal (InputError) goes to `refused` and, when announce_refusal, to
        sig_error; any other failure to `refused` and to sig_error with `context`. Cancellation passes."""
        try:
            return Attempt.DONE, await call()
        except asyncio.CancelledError:
            raise
        except InputError as exc:      # expected: no reason, an unknown id, decided meanwhile, ...
            message = f"{refusal_prefix}{exc}"
            if refused is not None:
                refused(message)
            if announce_refusal:
                self.report_error(message)
            else:
                log.warning("%s: %s", context, message)
            return Attempt.REFUSED, None
        except Exception as exc:   # noqa: BLE001 - every failure becomes sig_error
            if refused is not None:
                refused(str(exc))
            self.report_error(exc, context=context)
            return Attempt.FAILED, None

    def _task_done(self, task: asyncio.Task) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.report_error(task.exception(), context=f"{task.get_name()} failed")

    async def cancel_all(self) -> None:
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def report_error(self, error: BaseException | str, context: str = "") -> None:
        """The one handler: logs (with traceback when unexpected) and emits sig_error."""
        if isinstance(error, str):
            message = error
            log.warning("%s", message)
        elif isinstance(error, QuorumError):
            message = str(error)      # written for operators already
            log.warning("%s: %s", context or "engine error", message)
        else:
            message = f"{type(error).__name__}: {error}"
            log.error("%s", context or "unexpected error", exc_info=error)
        self.sig_error.emit(f"{context[:1].upper()}{context[1:]}: {message}" if context else message)


class Adapter(QObject):
    """One feature's door: its methods in, its signals out, over the shared core."""

    def __init__(self, core: ServiceCore) -> None:
        super().__init__(core)
        self.core = core

    @property
    def engine(self) -> Engine:
        return self.core.engine
