"""`main.py bench ui`: is the console's UI thread ever kept waiting while the engine works?

    main.py bench ui [--rate 5] [--seconds 60] [--fleet F] [--settings S] [--cache-dir DIR] [--json PATH]

Starts the real console (run_console, offscreen unless QT_QPA_PLATFORM says otherwise) on the fleet with a
fresh temporary database and QSettings folder, and measures:

- window_shown_s: from the process's start (Linux /proc; elsewhere from this module's import) to the first
  paint of the main window, while the models still load;
- event-loop stalls: a 10 ms Qt heartbeat timer; each beat's stall is how much later than 10 ms after the
  previous one it fired (p50, p99, max), while the fleet starts and then while demo traffic runs at --rate
  questions a second for --seconds. Every few seconds the front panels change (trust and approvals, cascade
  and alerts, fleet and questions) as an operator's would, so each panel draws under load.

The demo traffic asks at most 2 × cores questions at once and skips (and counts) a tick that finds them all
busy, so on a small machine the achieved rate is below --rate: it is reported beside it. Writes the JSON
(default reports/ui/ui_bench.json; the keys stall_p50_ms, stall_p99_ms, stall_max_ms, window_shown_s and
more) and a short Markdown report beside it, and prints progress as it runs.

The argparse part is here without Qt: main.py builds its parser from this module on every command.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from engine import ExitCode, quantile as percentile

_IMPORTED_AT = time.perf_counter()
_MARKS: dict[str, float] = {"main.py built its parser": _IMPORTED_AT}     # startup moments, perf_counter
PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_JSON = PROJECT_ROOT / "reports" / "ui" / "ui_bench.json"
HEARTBEAT_MS = 10
TARGET_P99_MS = 50.0
TARGET_SHOWN_S = 2.0
STARTUP_RUNS = 3             # starts of the real command; their median is window_shown_s
STARTUP_TIMEOUT_S = 60.0
PROGRESS_EVERY_S = 5.0
FRONT_EVERY_S = 5.0
FRONT_PANELS = (("trust", "approvals"), ("cascade", "alerts"), ("fleet", "questions"))
SHOT_SIZE = (1280, 800)
_QT_LOOP = "run_forever (qasync/__init__.py"


def add_ui_parser(kinds) -> argparse.ArgumentParser:
    """`bench ui`, among the sub-commands of bench.perf.cli's `bench` parser."""
    ui = kinds.add_parser("ui", help="event-loop stalls (p50, p99, max) of the real console while demo traffic "
                                     "runs, and the time until the window is shown")
    ui.add_argument("--rate", type=float, default=5.0, help="demo questions a second (default 5)")
    ui.add_argument("--seconds", type=float, default=60.0, help="how long the demo traffic runs (default 60)")
    ui.add_argument("--fleet", type=Path, default=argparse.SUPPRESS, help="fleet file (default: config/fleet.toml)")
    ui.add_argument("--settings", type=Path, default=argparse.SUPPRESS,
                    help="engine settings file (default: config/engine.toml)")
    ui.add_argument("--corpus", type=Path, default=argparse.SUPPRESS,
                    help="folder of .md/.txt files the built-in retrievers index")
    ui.add_argument("--cache-dir", type=Path, default=None,
                    help="agents' and embeddings' cache (default: the user cache dir, as `make run` uses)")
    ui.add_argument("--start-timeout", type=float, default=300.0, help="seconds to wait for the fleet (default 300)")
    ui.add_argument("--stall-stacks", type=float, default=0.0, metavar="MS",
                    help="while the UI thread is late by more than MS ms, sample what it and the other threads "
                         "run (Python frames; a watchdog thread), and list the top sites in the report (default off)")
    ui.add_argument("--json", type=Path, default=DEFAULT_JSON, metavar="PATH",
                    help=f"where the JSON goes (default {DEFAULT_JSON.relative_to(PROJECT_ROOT)}); the Markdown "
                         "report goes beside it")
    return ui


def run(args) -> int:
    _MARKS["command dispatched"] = time.perf_counter()
    from engine import InputError
    from engine import check_rate
    try:
        check_rate(args.rate)
        if not args.seconds > 0:
            raise InputError(f"--seconds must be more than 0, not {args.seconds:g}")
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")       # before any QApplication exists
    return _run(args)


# --- measuring --------------------------------------------------------------------------------

def process_started_at() -> tuple[float, str]:
    """The process's start on the perf_counter clock, and what it was measured from."""
    from .startup import process_started_at as started
    return started()


def measure_window_shown(fleet_path: Path | None, tmp: Path, runs: int = STARTUP_RUNS) -> list[float]:
    """Seconds from process start to the window's first paint, for `runs` starts of the console as an operator
    starts it (`main.py [--fleet F]`, its own database and settings, no demo traffic): each run is stopped
    (SIGTERM, the console's orderly close) as soon as its window has painted, models still loading."""
    import signal
    import subprocess

    times = []
    for n in range(runs):
        probe, ini = tmp / f"startup-{n}.json", tmp / f"startup-{n}.ini"
        ini.write_text("[demo]\nenabled=false\n", encoding="utf-8")
        env = {**os.environ, "QUORUM_STARTUP_PROBE": str(probe), "QUORUM_SETTINGS": str(ini),
               "QUORUM_DB": str(tmp / f"startup-{n}.db"), "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
        command = [sys.executable, str(PROJECT_ROOT / "main.py"), *(["--fleet", str(fleet_path)] if fleet_path else [])]
        process = subprocess.Popen(command, cwd=PROJECT_ROOT, env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            while not probe.exists() and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            if probe.exists():
                times.append(json.loads(probe.read_text(encoding="utf-8"))["window_shown_s"])
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    return times


@dataclass
class StallLog:
    """Heartbeat stalls (ms) of one phase, and when each beat came (perf_counter)."""
    stalls: list[float] = field(default_factory=list)
    times: list[float] = field(default_factory=list)

    def add(self, stall_ms: float, at: float) -> None:
        self.stalls.append(stall_ms)
        self.times.append(at)

    def worst(self, n: int, since: float) -> list[tuple[float, float]]:
        """The n longest stalls as (ms, seconds after `since` when they ended), longest first."""
        ranked = sorted(zip(self.stalls, self.times), reverse=True)[:n]
        return [(round(ms, 1), round(at - since, 2)) for ms, at in ranked]

    def summary(self) -> dict[str, float]:
        s = self.stalls
        return {"p50_ms": round(percentile(s, 0.50), 2), "p99_ms": round(percentile(s, 0.99), 2),
                "max_ms": round(max(s, default=0.0), 2), "beats": len(s),
                "over_50ms": sum(x > 50 for x in s), "stalled_s": round(sum(x for x in s if x > 50) / 1000, 2)}


class StallWatch:
    """A watchdog thread: while the heartbeat is more than `threshold_ms` late, samples every 5 ms where the UI
    thread is (its Python stack) and which threads used the CPU meanwhile (Linux: /proc/self/task/*/stat), with
    where each of those was. The UI thread's frames say what kept it; when it sits in Qt's loop and used no CPU,
    it was waiting, and the busy threads say who held the interpreter lock."""

    SAMPLE_EVERY_S = 0.005
    PROJECT = ("/console/", "/engine/", "/pyqtgraph/", "/qasync/")

    def __init__(self, threshold_ms: float, last_beat, phase) -> None:
        import collections
        import threading
        self.threshold_s = threshold_ms / 1000
        self._last_beat = last_beat          # () -> perf_counter of the latest heartbeat
        self._phase = phase                  # () -> "startup", "traffic", ...
        self._main = threading.main_thread()
        self.ui_sites: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.cpu_sites: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.samples: collections.Counter = collections.Counter()
        self.ui_cpu_ticks: collections.Counter = collections.Counter()
        self.stalled_ticks: collections.Counter = collections.Counter()     # wall time stalled, in CPU ticks
        self._ticks: dict[int, int] = {}
        self._tick_s = 1 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="bench-stall-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=1.0)

    def _watch(self) -> None:
        import threading
        stalled_since: float | None = None
        while not self._stop.wait(self.SAMPLE_EVERY_S):
            now = time.perf_counter()
            if now - self._last_beat() < self.threshold_s:
                stalled_since = None
                continue
            phase = self._phase()
            threads = {t.native_id: t for t in threading.enumerate() if t.native_id is not None}
            used = self._cpu_used(threads)          # since the previous sample (nothing on a stall's first)
            if stalled_since is None:
                stalled_since = now
                continue
            self.samples[phase] += 1
            frames = sys._current_frames()
            main = frames.get(self._main.ident)
            if main is not None:
                self.ui_sites[phase][self._site(main, 4)] += 1
            for native_id, ticks in used.items():
                thread = threads[native_id]
                if thread is self._thread:      # the watchdog itself
                    continue
                if thread is self._main:
                    self.ui_cpu_ticks[phase] += ticks
                    continue
                frame = frames.get(thread.ident)
                site = self._site(frame, 2) if frame is not None else "(no Python frame)"
                self.cpu_sites[phase][f"{thread.name}: {site}"] += ticks

    def _cpu_used(self, threads) -> dict[int, int]:
        used = {}
        for native_id in threads:
            try:
                stat = Path(f"/proc/self/task/{native_id}/stat").read_text()
                fields = stat[stat.rindex(")") + 2:].split()
                ticks = int(fields[11]) + int(fields[12])          # utime + stime
            except (OSError, ValueError, IndexError):
                continue
            before = self._ticks.get(native_id)
            self._ticks[native_id] = ticks
            if before is not None and ticks > before:
                used[native_id] = ticks - before
        return used

    @classmethod
    def _site(cls, frame, depth: int) -> str:
        """The innermost frame and the next `depth - 1` project frames: 'function (dir/file:line) < caller'."""
        stack = []
        while frame is not None:
            stack.append(frame)
            frame = frame.f_back
        project = [f for f in stack[1:] if any(p in f.f_code.co_filename for p in cls.PROJECT)]
        chosen = [stack[0]] + project[:depth - 1]
        return " < ".join(f"{f.f_code.co_name} ({'/'.join(Path(f.f_code.co_filename).parts[-2:])}:{f.f_lineno})"
                          for f in chosen)

    def summary(self, phase: str, n: int = 12) -> dict:
        """One phase: the UI thread's sites by share of stalled samples; the other threads' sites by share of
        the CPU time they used while the UI thread was stalled; how busy the UI thread itself was."""
        samples = max(self.samples[phase], 1)
        cpu = sum(self.cpu_sites[phase].values()) + self.ui_cpu_ticks[phase]
        stalled_s = self.samples[phase] * self.SAMPLE_EVERY_S
        return {"samples": self.samples[phase],
                "ui_thread_busy": round(min(self.ui_cpu_ticks[phase] * self._tick_s / stalled_s, 1.0), 3)
                if stalled_s else 0.0,
                "ui_thread": [(site, round(c / samples, 3)) for site, c in self.ui_sites[phase].most_common(n)],
                "cpu_meanwhile": [(site, round(c / max(cpu, 1), 3)) for site, c in self.cpu_sites[phase].most_common(n)]}


def _run(args) -> int:
    import tempfile

    from PySide6.QtCore import QEvent, QObject, Qt, QTimer
    from PySide6.QtWidgets import QApplication, QMainWindow

    from .settings import use_scratch_settings

    started_at, started_from = process_started_at()
    # The order main.py follows for the console: the fleet and settings files, console.app, run_console.
    from engine import load_fleet, load_settings
    from engine import default_max_in_flight
    corpus = getattr(args, "corpus", None)
    fleet_path = getattr(args, "fleet", None)
    fleet = load_fleet(fleet_path, corpus_dir=corpus.resolve() if corpus else None)
    settings = load_settings(getattr(args, "settings", None))
    from .app import run_console
    from .signals import first_emission
    from .service import Phase
    _MARKS["console.app imported"] = time.perf_counter()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    marks: dict[str, float] = {}

    class FirstPaint(QObject):
        """The main window's first paint (app-wide filter, removed once it has seen it)."""

        def eventFilter(self, obj, event) -> bool:       # noqa: N802 - Qt's name
            if event.type() == QEvent.Type.Show and isinstance(obj, QMainWindow):
                _MARKS.setdefault("window.show()", time.perf_counter())
            if event.type() == QEvent.Type.Paint and isinstance(obj, QMainWindow):
                marks.setdefault("shown", time.perf_counter())
                app.removeEventFilter(self)
            return False

    first_paint = FirstPaint()
    app.installEventFilter(first_paint)
    phases = {"startup": StallLog(), "traffic": StallLog()}
    result: dict = {}

    async def script(window, service) -> int:
        window.resize(*SHOT_SIZE)
        heartbeat = QTimer()
        heartbeat.setTimerType(Qt.TimerType.PreciseTimer)
        heartbeat.setInterval(HEARTBEAT_MS)
        state = {"phase": "startup", "last": time.perf_counter()}

        def beat() -> None:
            now = time.perf_counter()
            stall = max(0.0, (now - state["last"]) * 1000 - HEARTBEAT_MS)
            state["last"] = now
            log = phases.get(state["phase"])
            if log is not None:
                log.add(stall, now)

        heartbeat.timeout.connect(beat)
        heartbeat.start()
        watch = StallWatch(args.stall_stacks, lambda: state["last"], lambda: state["phase"]) \
            if args.stall_stacks > 0 else None
        if watch is not None:
            watch.start()
        def starting(up: int, total: int) -> None:
            print(f"bench ui: {up}/{total} agents up ({time.perf_counter() - started_at:.1f} s)", flush=True)

        service.sig_starting.connect(starting)
        try:
            print(f"bench ui: window created; waiting for the fleet ({len(fleet.agents)} agents) …", flush=True)
            while not service.ready:
                if service.phase is Phase.FAILED:
                    print("bench ui: the fleet did not start", file=sys.stderr)
                    return ExitCode.FAILURE
                try:
                    await first_emission(service.sig_ready, service.sig_error, timeout_s=args.start_timeout)
                except TimeoutError:
                    print(f"bench ui: the fleet was not ready within {args.start_timeout:g} s", file=sys.stderr)
                    return ExitCode.FAILURE
            service.sig_starting.disconnect(starting)
            ready_at = time.perf_counter()
            shown = marks.get("shown")
            entered = _MARKS.get("run_console called", started_at)
            shown_text = f"this window shown {shown - entered:.2f} s after run_console" if shown else \
                "window not painted yet"
            print(f"bench ui: {shown_text}; fleet ready after {ready_at - entered:.1f} s; demo traffic at "
                  f"{args.rate:g} q/s for {args.seconds:g} s", flush=True)
            state["phase"] = "traffic"
            state["last"] = time.perf_counter()
            traffic_at = time.perf_counter()
            if not service.demo.start(args.rate):
                print("bench ui: demo traffic did not start", file=sys.stderr)
                return ExitCode.FAILURE
            await _drive(window, service, args.seconds, phases["traffic"])
            traffic_s = time.perf_counter() - traffic_at
            state["phase"] = "draining"
            stats = service.demo.stats()
            service.demo.stop()
            _progress(traffic_s, args.seconds, stats, phases["traffic"])
            result.update(_results(args, fleet_path, stats, traffic_s, phases, started_at, started_from, entry,
                                   shown, ready_at, default_max_in_flight()))
            result["worst_stalls_ms_at_s"] = phases["traffic"].worst(5, traffic_at)
            print(f"bench ui: demo traffic stopped; waiting for {service.demo.stats().in_flight} question(s) in "
                  "flight, then the fleet stops", flush=True)
            return ExitCode.OK
        finally:
            heartbeat.stop()
            if watch is not None:
                watch.stop()
                result["stall_stacks"] = {"threshold_ms": args.stall_stacks,
                                          **{phase: watch.summary(phase) for phase in ("startup", "traffic")}}

    with tempfile.TemporaryDirectory(prefix="quorum-bench-ui-") as tmp:
        print(f"bench ui: starting the console {STARTUP_RUNS} times as an operator does, for the time to its "
              f"window …", flush=True)
        startup_runs = measure_window_shown(fleet_path, Path(tmp))
        print(f"bench ui: window shown after {', '.join(f'{t:.2f}' for t in startup_runs) or 'never'} s", flush=True)
        use_scratch_settings(Path(tmp) / "settings")       # the bench starts the demo traffic itself
        entry = _MARKS["run_console called"] = time.perf_counter()
        code = run_console(fleet, settings, db_path=Path(tmp) / "quorum.db", cache_dir=args.cache_dir,
                           script=script)
    if code != ExitCode.OK or not result:
        return code or ExitCode.FAILURE
    result["window_shown_in_bench_s"] = result["window_shown_s"]      # this process: the bench's own imports too
    result["window_shown_runs_s"] = startup_runs
    result["window_shown_s"] = round(percentile(startup_runs, 0.5), 3) if startup_runs else None
    result["window_shown_from"] = f"process start of `main.py`, median of {len(startup_runs)} starts"
    _write(args.json, result)
    _print_summary(result, args.json)
    return ExitCode.OK


async def _drive(window, service, seconds: float, log: StallLog) -> None:
    """While the demo traffic runs: the front panels change every FRONT_EVERY_S (an operator looking around,
    so every panel draws under load) and a progress line every PROGRESS_EVERY_S."""
    started = time.perf_counter()
    fronts = progress = 0
    while (elapsed := time.perf_counter() - started) < seconds:
        if elapsed >= fronts * FRONT_EVERY_S:
            for panel_id in FRONT_PANELS[fronts % len(FRONT_PANELS)]:
                if panel_id in window.docks:
                    window.show_panel(panel_id, focus=False)
            fronts += 1
        if elapsed >= (progress + 1) * PROGRESS_EVERY_S:
            progress += 1
            _progress(elapsed, seconds, service.demo.stats(), log)
        await asyncio.sleep(0.25)


def _progress(elapsed: float, total: float, stats, log: StallLog) -> None:
    recent = StallLog(log.stalls[-int(PROGRESS_EVERY_S * 1000 / HEARTBEAT_MS):])     # about the last 5 s
    s = recent.summary()
    achieved = stats.asked / elapsed if elapsed else 0.0
    print(f"[{elapsed:5.0f}/{total:.0f} s] {stats.line()} · {achieved:.2f} q/s asked · stalls (last "
          f"{PROGRESS_EVERY_S:.0f} s) p50 {s['p50_ms']:.0f} ms, p99 {s['p99_ms']:.0f} ms, max {s['max_ms']:.0f} ms",
          flush=True)


def _results(args, fleet_path, stats, traffic_s, phases, started_at, started_from, entry, shown, ready_at,
             max_in_flight) -> dict:
    traffic, startup = phases["traffic"].summary(), phases["startup"].summary()
    load1, load5, _ = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    return {
        "stall_p50_ms": traffic["p50_ms"], "stall_p99_ms": traffic["p99_ms"], "stall_max_ms": traffic["max_ms"],
        "window_shown_s": round(shown - started_at, 3) if shown else None,
        "window_shown_from": started_from,
        # The bench's own start, up to the startup runs (which come next and take seconds).
        "startup_marks_s": {name: round(at - started_at, 3) for name, at in sorted(_MARKS.items(), key=lambda kv: kv[1])
                            if at <= _MARKS.get("console.app imported", at)},
        "window_shown_after_run_console_s": round(shown - entry, 3) if shown else None,
        "fleet_ready_s": round(ready_at - entry, 2),        # from run_console: the startup runs came first
        "stalls_over_50ms": traffic["over_50ms"], "stalled_s": traffic["stalled_s"], "heartbeats": traffic["beats"],
        "startup_stall_p50_ms": startup["p50_ms"], "startup_stall_p99_ms": startup["p99_ms"],
        "startup_stall_max_ms": startup["max_ms"],
        "rate": args.rate, "seconds": round(traffic_s, 2),
        "asked": stats.asked, "answered": stats.answered, "failed": stats.failed, "skipped": stats.skipped,
        "in_flight_at_end": stats.in_flight, "max_in_flight": max_in_flight,
        "achieved_rate": round(stats.asked / traffic_s, 3), "answered_rate": round(stats.answered / traffic_s, 3),
        "last_error": stats.last_error,
        "heartbeat_ms": HEARTBEAT_MS, "fleet": str(fleet_path or "config/fleet.toml"),
        "cores": os.cpu_count(), "load_average_1m_5m": [round(load1, 2), round(load5, 2)],
        "platform": os.environ.get("QT_QPA_PLATFORM", ""), "python": platform.python_version(),
        "command": "main.py " + " ".join(sys.argv[1:]) if sys.argv and sys.argv[0].endswith("main.py") else "",
    }


def _write(path: Path, result: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    path.with_suffix(".md").write_text(markdown(result), encoding="utf-8")


def markdown(r: dict) -> str:
    def verdict(ok: bool) -> str:
        return "met" if ok else "**not met**"
    shown = r["window_shown_s"]
    lines = [
        "# Console responsiveness under demo traffic (`main.py bench ui`)", "",
        f"Command: `{r['command'] or 'main.py bench ui'}` · fleet `{r['fleet']}` · {r['cores']} cores · load "
        f"average at the end {r['load_average_1m_5m'][0]} (1 min) · Qt platform `{r['platform']}` · "
        f"heartbeat {r['heartbeat_ms']} ms", "",
        "| measure | value | target |", "|---|---|---|",
        f"| window shown after {r['window_shown_from']} | {shown if shown is not None else '—'} s | "
        f"≤ {TARGET_SHOWN_S:g} s, {verdict(shown is not None and shown <= TARGET_SHOWN_S)} |",
        f"| each start of `main.py` | {' · '.join(f'{t} s' for t in r.get('window_shown_runs_s', []))} | |",
        "| the bench's own start (its parser imports every command), seconds after its process start | "
        + " · ".join(f"{name} {at}" for name, at in r["startup_marks_s"].items()) + " | |",
        f"| fleet ready | {r['fleet_ready_s']} s | |",
        f"| stalls while the fleet starts: p50 · p99 · max | {r['startup_stall_p50_ms']} · "
        f"{r['startup_stall_p99_ms']} · {r['startup_stall_max_ms']} ms | |",
        f"| stalls under demo traffic: p50 · p99 · max | {r['stall_p50_ms']} · {r['stall_p99_ms']} · "
        f"{r['stall_max_ms']} ms | p99 ≤ {TARGET_P99_MS:g} ms, {verdict(r['stall_p99_ms'] <= TARGET_P99_MS)} |",
        f"| beats late by more than 50 ms | {r['stalls_over_50ms']} of {r['heartbeats']} ({r['stalled_s']} s) | |",
        "| longest stalls (ms, at s into the traffic) | "
        + ", ".join(f"{ms:g} at {at:g}" for ms, at in r.get("worst_stalls_ms_at_s", [])) + " | |",
        f"| demo traffic asked for · achieved (asked) · answered | {r['rate']:g} · {r['achieved_rate']} · "
        f"{r['answered_rate']} q/s over {r['seconds']} s | |",
        f"| asked · answered · failed · skipped (cap {r['max_in_flight']} in flight) | {r['asked']} · "
        f"{r['answered']} · {r['failed']} · {r['skipped']} | |", "",
        "A stall is how much later than 10 ms after the previous beat the heartbeat timer fired. The "
        "demo traffic skips a tick while the cap of questions in flight is reached, so the achieved rate is "
        "what this machine answers.", ""]
    stacks = r.get("stall_stacks")
    for phase, title in (("traffic", "under demo traffic"), ("startup", "while the fleet started")):
        if not stacks or not stacks[phase]["samples"]:
            continue
        lines += [f"Where the time went {title}, while the UI thread was more than {stacks['threshold_ms']:g} ms "
                  f"late ({stacks[phase]['samples']} samples, one every 5 ms, Python frames only; "
                  f"`{_QT_LOOP}…` means inside Qt: painting, layout, or waiting for the interpreter lock). The UI "
                  f"thread itself used the CPU {stacks[phase]['ui_thread_busy']:.0%} of that time.", "",
                  "| share of samples | UI thread |", "|---|---|"]
        lines += [f"| {share:.0%} | `{site}` |" for site, share in stacks[phase]["ui_thread"]]
        lines += ["", "| share of the CPU used meanwhile | other thread: where it was |", "|---|---|"]
        lines += [f"| {share:.0%} | `{site}` |" for site, share in stacks[phase]["cpu_meanwhile"]]
        lines.append("")
    if r["last_error"]:
        lines += [f"Last failed question: {r['last_error']}", ""]
    return "\n".join(lines)


def _print_summary(r: dict, path: Path) -> None:
    print(f"window shown {r['window_shown_s']} s after {r['window_shown_from']} (target ≤ {TARGET_SHOWN_S:g} s); "
          f"fleet ready {r['fleet_ready_s']} s")
    print(f"stalls under demo traffic: p50 {r['stall_p50_ms']} ms, p99 {r['stall_p99_ms']} ms, max "
          f"{r['stall_max_ms']} ms (target p99 ≤ {TARGET_P99_MS:g} ms); {r['stalls_over_50ms']} beats late by "
          f"> 50 ms of {r['heartbeats']}")
    print(f"while the fleet started: p50 {r['startup_stall_p50_ms']} ms, p99 {r['startup_stall_p99_ms']} ms, "
          f"max {r['startup_stall_max_ms']} ms")
    print(f"demo traffic: {r['rate']:g} q/s asked for, {r['achieved_rate']} asked and {r['answered_rate']} answered "
          f"a second; {r['asked']} asked, {r['answered']} answered, {r['failed']} failed, {r['skipped']} skipped")
    print(f"report: {path} and {path.with_suffix('.md')}")
