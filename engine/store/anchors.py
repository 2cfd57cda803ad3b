"""The audit chain's head, anchored outside the database now and then.

The chain proves that no event was edited, dropped or reordered, as long as nobody recomputes every hash from
the genesis on: someone who can write to the database can. An anchor is the head (seq and hash) written to a
file outside the database and signed with a key that is not in the database either (HMAC-SHA256; the key
file is made once, mode 0600). `audit verify` then checks every anchor of this store: an event the anchor
named must still hash to what it said, so a rewritten history shows, and a forged anchor does not sign.

One anchor is one JSON line: {"store", "seq", "hash", "at", "sig"}. Lines of other stores are left alone.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from ..errors import InputError, StoreError
from .db import Store

KEY_BYTES = 32


@dataclass(frozen=True)
class Anchor:
    store: str
    seq: int
    hash: str
    at: float


@dataclass(frozen=True)
class AnchorCheck:
    """What the anchors say of the chain as it is now."""
    held: int                   # anchors of this store whose event still hashes as anchored
    problems: tuple[str, ...]   # one line each: a rewritten event, a missing event, an anchor that does not sign

    @property
    def intact(self) -> bool:
        return not self.problems

    @property
    def message(self) -> str:
        if self.intact:
            return "1 anchor holds" if self.held == 1 else f"{self.held} anchors hold"
        return "; ".join(self.problems)


def default_anchor_files() -> tuple[Path, Path]:
    """The anchors file and the key that signs them, outside every store: $QUORUM_ANCHORS and $QUORUM_ANCHOR_KEY,
    else the user data dir and the user config dir."""
    return (Path(os.environ.get("QUORUM_ANCHORS") or Path(platformdirs.user_data_dir("quorum")) / "anchors.jsonl"),
            Path(os.environ.get("QUORUM_ANCHOR_KEY") or Path(platformdirs.user_config_dir("quorum")) / "anchor.key"))


def anchor_key(path: Path) -> bytes:
    """The signing key, made on first use (readable by its owner only)."""
    try:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_hex(KEY_BYTES) + "\n")
        if path.stat().st_mode & 0o077:
            raise InputError(f"{path}: the anchor key is readable by other users; chmod 600 it")
        return bytes.fromhex(path.read_text().strip())
    except ValueError:
        raise InputError(f"{path}: not an anchor key (expected {KEY_BYTES * 2} hex digits)") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read or make the anchor key ({exc.strerror})") from exc


def _signature(key: bytes, anchor: Anchor) -> str:
    body = json.dumps([anchor.store, anchor.seq, anchor.hash, repr(float(anchor.at))], separators=(",", ":"))
    return hmac.new(key, body.encode("utf-8"), hashlib.sha256).hexdigest()


def anchor_head(store: Store, anchors: Path, key_file: Path) -> Anchor | None:
    """Appends the chain's head to the anchors file; None when the chain has no event yet. On the store's thread."""
    row = store.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    if row is None:
        return None
    anchor = Anchor(str(store.target), int(row[0]), str(row[1]), store.clock())
    line = json.dumps({"store": anchor.store, "seq": anchor.seq, "hash": anchor.hash, "at": anchor.at,
                       "sig": _signature(anchor_key(key_file), anchor)}, separators=(",", ":"))
    try:
        anchors.parent.mkdir(parents=True, exist_ok=True)
        with anchors.open("a", encoding="utf-8") as out:
            out.write(line + "\n")
            out.flush()
            os.fsync(out.fileno())
    except OSError as exc:
        raise StoreError(f"{anchors}: the anchor could not be written ({exc.strerror})") from exc
    return anchor


def check_anchors(store: Store, anchors: Path, key_file: Path) -> AnchorCheck:
    """Every anchor of this store in the file, against the chain as it is now. On the store's thread."""
    if not anchors.exists():
        return AnchorCheck(0, ())
    key = anchor_key(key_file)
    held, problems = 0, []
    for number, line in enumerate(anchors.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            anchor = Anchor(str(raw["store"]), int(raw["seq"]), str(raw["hash"]), float(raw["at"]))
            signed = str(raw["sig"])
        except (ValueError, KeyError, TypeError):
            problems.append(f"{anchors} line {number}: not an anchor")
            continue
        if anchor.store != str(store.target):
            continue
        if not hmac.compare_digest(signed, _signature(key, anchor)):
            problems.append(f"{anchors} line {number}: the signature does not match (the anchor was edited, or "
                            "signed with another key)")
            continue
        row = store.execute("SELECT hash FROM audit WHERE seq = ?", [anchor.seq]).fetchone()
        if row is None:
            problems.append(f"event {anchor.seq} is gone, though anchored on line {number}: events were removed")
        elif row[0] != anchor.hash:
            problems.append(f"event {anchor.seq} no longer hashes as anchored on line {number}: the history up to "
                            "it was rewritten")
        else:
            held += 1
    return AnchorCheck(held, tuple(problems))


def desk_id(key_file: Path | None = None) -> str:
    """This desk's stable name among a team's (the reputation book names its own built-in agents by it): derived
    from the anchors' signing key, made once per user and machine, so it needs no file of its own and says
    nothing of the key."""
    key = anchor_key(key_file or default_anchor_files()[1])
    return hashlib.sha256(b"quorum desk\0" + key).hexdigest()[:12]
