"""`main.py bench soak`: many agents, steady traffic, a long time: does anything grow that should not?

    main.py bench soak [--agents 50] [--rate 10] [--minutes 10] [--in-flight 8] [--tier auto] [--json PATH]

The agents are the real built-in agent apps (BM25, title-weighted BM25 and TF-IDF retrievers, extractive
generators: four retrievers to one generator) served on 127.0.0.1 by one helper process
(bench.perf.soak_agents), and the engine reaches them over HTTP as the external agents of a fleet file it
is given, with a fresh SQLite file. With fifty agents in the fleet, the tiers take the most trusted few
(fast 2 retrievers and 1 generator, standard 5 and 3, high 7 and 3), as an operator with a big fleet would set
them. The demo questions are fed by engine.demo's DemoTraffic at --rate, at most --in-flight at once (a tick
that finds them all busy is skipped and counted, never queued), so the achieved rate is reported beside it.

Every --sample-every seconds: the engine's resident memory, open descriptors, asyncio tasks and threads, the
agent host's memory, and the latency of the questions answered since the last sample. After a warm-up
(a tenth of the run, at least a minute), memory growth is (last - at warm-up) / at warm-up; the target is at
most 5 %. p99 is reported per minute.
"""
from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from engine.cli.exit_codes import ExitCode
from engine.stats import quantile

from .measure import open_fds, rss_mb

RETRIEVER_BACKENDS = ("bm25", "bm25-title", "tfidf")
GENERATORS_PER_RETRIEVER = 0.25
TARGET_RSS_GROWTH = 0.05
SOAK_TIERS = {"low": (2, 1), "medium": (5, 3), "high": (7, 3)}     # retrievers, generators per question


def add_soak_parser(kinds, default_json: Path) -> argparse.ArgumentParser:
    soak = kinds.add_parser("soak", help="many agents on loopback, steady demo traffic for minutes: memory, "
                                         "descriptors, tasks and p99 over time")
    soak.add_argument("--agents", type=int, default=50, help="agents in the fleet (default 50; 4 retrievers : 1 generator)")
    soak.add_argument("--rate", type=float, default=10.0, help="questions a second asked for (default 10)")
    soak.add_argument("--minutes", type=float, default=10.0, help="how long the traffic runs (default 10)")
    soak.add_argument("--in-flight", type=int, default=8, help="questions at once at most (default 8)")
    soak.add_argument("--tier", choices=["auto", "low", "medium", "high"], default="auto",
                      help="every question's tier (default auto: each demo question's own)")
    soak.add_argument("--sample-every", type=float, default=10.0, help="seconds between samples (default 10)")
    soak.add_argument("--json", type=Path, default=default_json, metavar="PATH", dest="soak_json",
                      help="the JSON; .md and .svg beside it")
    return soak


def fleet_files(tmp: Path, n: int, corpus: Path) -> Path:
    """The agent host's fleet file (built-in form); returns its path."""
    n_gen = max(1, round(n * GENERATORS_PER_RETRIEVER / (1 + GENERATORS_PER_RETRIEVER)))
    lines = ["version = 1", f"corpus = {json.dumps(str(corpus))}", ""]
    for i in range(n - n_gen):
        lines += ["[[agents]]", f'id = "soak-ret-{i + 1:02d}"', 'role = "retriever"',
                  f'backend = "{RETRIEVER_BACKENDS[i % len(RETRIEVER_BACKENDS)]}"', ""]
    for i in range(n_gen):
        lines += ["[[agents]]", f'id = "soak-gen-{i + 1:02d}"', 'role = "generator"', 'backend = "extractive"', ""]
    path = tmp / "soak-agents.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def engine_fleet(tmp: Path, host_fleet, ports: dict[str, int]) -> Path:
    """The engine's fleet file: the same agents as external ones at their loopback URLs."""
    lines = ["version = 1", f"corpus = {json.dumps(str(host_fleet.corpus_dir))}", ""]
    for spec in host_fleet.agents:
        lines += ["[[agents]]", f'id = "{spec.id}"', f'role = "{spec.role.value}"',
                  f'url = "http://127.0.0.1:{ports[spec.id]}"', "timeout_s = 10.0", ""]
    path = tmp / "soak-fleet.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def start_host(fleet_path: Path, cache_dir: Path, log_path: Path, timeout_s: float = 300.0) -> tuple[subprocess.Popen, dict]:
    from engine.config import PROJECT_ROOT
    from engine.errors import FleetError
    from .soak_agents import READY_PREFIX
    log = log_path.open("w")
    process = subprocess.Popen([sys.executable, "-m", "bench.perf.soak_agents", "--fleet", str(fleet_path),
                                "--cache-dir", str(cache_dir)], cwd=PROJECT_ROOT, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=log, text=True)
    log.close()
    # A host that hangs without a word would block the read below for ever: past the deadline it is killed,
    # which closes its stdout and ends the read.
    watchdog = threading.Timer(timeout_s, process.kill)
    watchdog.start()
    try:
        assert process.stdout is not None
        for line in process.stdout:     # the host prints nothing else on stdout
            if line.startswith(READY_PREFIX):
                return process, json.loads(line[len(READY_PREFIX):])
    finally:
        watchdog.cancel()
    process.kill()
    process.wait()
    raise FleetError(f"the soak's agent host did not come up within {timeout_s:g} s; see {log_path}")


@dataclasses.dataclass(frozen=True)
class Sample:
    t_s: float
    asked: int
    answered: int
    failed: int
    skipped: int
    engine_rss_mb: float
    host_rss_mb: float
    fds: int
    tasks: int
    threads: int
    answered_in_window: int
    p50_ms: float
    p99_ms: float


def run_soak(args) -> int:
    from engine.errors import QuorumError
    try:
        if args.agents < 4 or args.minutes <= 0 or args.in_flight < 1 or args.sample_every <= 0:
            raise ValueError("--agents must be at least 4; --minutes, --in-flight and --sample-every positive")
        from engine.demo import check_rate
        check_rate(args.rate)
        return asyncio.run(_soak(args))
    except (QuorumError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT


async def _soak(args) -> int:
    from engine import Engine, RiskTier, load_fleet, load_settings
    from engine.config import PROJECT_ROOT, TierPolicy
    from engine.demo import DemoTraffic
    from engine.engine import default_cache_dir
    from .report import write_json
    settings = load_settings(getattr(args, "settings", None))
    tiers = {name: dataclasses.replace(settings.tiers.get(name, TierPolicy()), retrievers=r, generators=g)
             for name, (r, g) in SOAK_TIERS.items()}
    settings = dataclasses.replace(settings, tiers=tiers)
    corpus = (getattr(args, "corpus", None) or PROJECT_ROOT / "resources" / "corpus").resolve()
    with tempfile.TemporaryDirectory(prefix="quorum-soak-") as tmp_name:
        tmp = Path(tmp_name)
        host_fleet = load_fleet(fleet_files(tmp, args.agents, corpus))
        print(f"soak: starting {len(host_fleet.agents)} agents on 127.0.0.1 in one host process", flush=True)
        host, ports = start_host(host_fleet.path, tmp / "cache", tmp / "soak-agents.log")
        try:
            fleet = load_fleet(engine_fleet(tmp, host_fleet, ports))
            window: list[float] = []
            tier = None if args.tier == "auto" else RiskTier(args.tier)
            # The engine's embedding cache is the user's, as `make run` uses: the corpus is embedded once.
            async with Engine(fleet, settings, db_path=tmp / "soak.db", cache_dir=default_cache_dir()) as engine:
                async def ask(question: str, own_tier):
                    started = time.perf_counter()
                    try:
                        return await engine.questions.ask(question, tier or own_tier)
                    finally:
                        window.append((time.perf_counter() - started) * 1000)

                traffic = DemoTraffic(ask, lambda event: None, max_in_flight=args.in_flight, rate=args.rate)
                samples = await _drive(traffic, window, host.pid, args)
                await traffic.aclose()
        finally:
            host.kill()
            host.wait()
    result = summarise(samples, args)
    path = write_json(args.soak_json, result)
    md = write_soak_report(path, result)
    print()
    print(md.read_text(encoding="utf-8"))
    return ExitCode.OK


async def _drive(traffic, window: list[float], host_pid: int, args) -> list[Sample]:
    samples: list[Sample] = []
    started = time.monotonic()
    end = started + args.minutes * 60
    traffic.start()
    next_at = started + args.sample_every
    while True:
        await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        stats = traffic.stats()
        latencies, window[:] = list(window), []
        sample = Sample(round(time.monotonic() - started, 1), stats.asked, stats.answered, stats.failed, stats.skipped,
                        round(rss_mb(), 1), round(rss_mb(host_pid), 1), open_fds(), len(asyncio.all_tasks()),
                        threading.active_count(), len(latencies), round(quantile(latencies, 0.5), 1),
                        round(quantile(latencies, 0.99), 1))
        samples.append(sample)
        print(f"[{sample.t_s:6.0f} s] asked {sample.asked} answered {sample.answered} failed {sample.failed} "
              f"skipped {sample.skipped} · engine {sample.engine_rss_mb:.0f} MB, {sample.fds} fds, "
              f"{sample.tasks} tasks, {sample.threads} threads · host {sample.host_rss_mb:.0f} MB · "
              f"p50 {sample.p50_ms:.0f} p99 {sample.p99_ms:.0f} ms", flush=True)
        if time.monotonic() >= end:
            break
        next_at += args.sample_every
    traffic.stop()
    return samples


def summarise(samples: list[Sample], args) -> dict:
    duration = samples[-1].t_s if samples else 0.0
    warm_s = max(60.0, duration / 10) if duration > 120 else duration / 2
    base = next((s for s in samples if s.t_s >= warm_s), samples[0])
    last = samples[-1]
    per_minute: dict[int, list[float]] = {}
    for s in samples:
        per_minute.setdefault(int((s.t_s - 1e-9) // 60), []).append(s.p99_ms)
    p99s = [max(v) for _, v in sorted(per_minute.items())]
    after_warm = [s.p99_ms for s in samples if s.t_s > base.t_s and s.answered_in_window]
    return {
        "agents": args.agents, "rate_asked": args.rate, "minutes": round(duration / 60, 2), "in_flight": args.in_flight,
        "tier": args.tier, "asked": last.asked, "answered": last.answered, "failed": last.failed,
        "skipped": last.skipped, "achieved_rate": round(last.asked / duration, 2) if duration else 0.0,
        "warmup_s": base.t_s,
        "rss_mb_at_warmup": base.engine_rss_mb, "rss_mb_end": last.engine_rss_mb,
        "rss_growth": round((last.engine_rss_mb - base.engine_rss_mb) / base.engine_rss_mb, 4) if base.engine_rss_mb else None,
        "host_rss_growth": round((last.host_rss_mb - base.host_rss_mb) / base.host_rss_mb, 4) if base.host_rss_mb else None,
        "fds_at_warmup": base.fds, "fds_end": last.fds, "tasks_at_warmup": base.tasks, "tasks_end": last.tasks,
        "threads_at_warmup": base.threads, "threads_end": last.threads,
        "p99_ms_per_minute": p99s,
        "p99_ms_after_warmup_median": round(quantile(after_warm, 0.5), 1),
        "p99_ms_after_warmup_max": round(max(after_warm), 1) if after_warm else 0.0,
        "samples": [dataclasses.asdict(s) for s in samples],
        "targets": {"rss_growth": TARGET_RSS_GROWTH},
    }


def write_soak_report(json_path: Path, result: dict) -> Path:
    from bench.evaluation.plot import write_grouped_bars
    from .report import _nice_max
    samples = result["samples"]
    minutes = [str(i + 1) for i in range(len(result["p99_ms_per_minute"]))]
    rss = [max(s["engine_rss_mb"] for s in samples if int((s["t_s"] - 1e-9) // 60) == i) for i in range(len(minutes))]
    write_grouped_bars(json_path.with_name(json_path.stem + "_rss.svg"), minutes, [("engine RSS MB", rss)],
                       title="Engine memory per minute of the soak", y_label="MB", x_label="minute",
                       y_max=_nice_max(max(rss) if rss else 1))
    write_grouped_bars(json_path.with_name(json_path.stem + "_p99.svg"), minutes,
                       [("p99 ms", result["p99_ms_per_minute"])], title="p99 latency per minute of the soak",
                       y_label="ms", x_label="minute", y_max=_nice_max(max(result["p99_ms_per_minute"] or [1])))
    growth = result["rss_growth"]
    lines = [
        "# Soak: memory, descriptors, tasks and latency over time",
        "",
        f"{result['agents']} agents on 127.0.0.1, demo questions asked for at {result['rate_asked']}/s for "
        f"{result['minutes']} minutes, at most {result['in_flight']} at once, tier {result['tier']}.",
        "",
        f"- asked {result['asked']} (achieved {result['achieved_rate']}/s), answered {result['answered']}, failed "
        f"{result['failed']}, ticks skipped because {result['in_flight']} were in flight: {result['skipped']}",
        f"- engine memory: {result['rss_mb_at_warmup']:.0f} MB after the warm-up ({result['warmup_s']:.0f} s), "
        f"{result['rss_mb_end']:.0f} MB at the end: growth {growth:+.1%} (target ≤ {TARGET_RSS_GROWTH:.0%}); "
        f"agent host {result['host_rss_growth']:+.1%}",
        f"- descriptors {result['fds_at_warmup']} → {result['fds_end']}; asyncio tasks {result['tasks_at_warmup']} → "
        f"{result['tasks_end']}; threads {result['threads_at_warmup']} → {result['threads_end']}",
        f"- p99 per minute (ms): {', '.join(f'{v:.0f}' for v in result['p99_ms_per_minute'])}",
        "",
        f"![memory]({json_path.stem}_rss.svg) ![p99]({json_path.stem}_p99.svg)",
    ]
    md = json_path.with_suffix(".md")
    md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return md
