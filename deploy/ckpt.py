"""`saclstm ckpt list|inspect|verify|promote`: checkpoint files without a learner."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from protocol.checkpoint import CheckpointError, decode_checkpoint, numbered


def _files(target: Path) -> list[Path]:
    if target.is_dir():
        live = [p for p in target.iterdir() if p.suffix == ".sacl" and not p.name.startswith("ckpt-")]
        return live + numbered(target)
    return [target]


def cmd_list(args: argparse.Namespace) -> int:
    files = _files(Path(args.path))
    if not files:
        print(f"no checkpoints in {args.path}", file=sys.stderr)
        return 1
    print(f"{'file':<28} {'ok':<4} {'grad_steps':>10} {'version':>8} {'env_steps':>10} {'rev':<17} updatedAt")
    for path in files:
        try:
            meta, _ = decode_checkpoint(path.read_bytes())
            print(f"{path.name:<28} {'yes':<4} {meta.get('grad_steps', 0):>10} {meta.get('version', 0):>8} "
                  f"{meta.get('env_steps', 0):>10} {meta['rev']:<17} {meta['updatedAt']}")
        except (OSError, CheckpointError) as exc:
            print(f"{path.name:<28} {'NO':<4} {exc}")
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    try:
        meta, tensors = decode_checkpoint(Path(args.path).read_bytes())
    except (OSError, CheckpointError) as exc:
        print(f"{args.path}: {exc}", file=sys.stderr)
        return 1
    out = {"meta": meta, "tensors": {k: {"dtype": str(v.dtype), "shape": list(v.shape)} for k, v in tensors.items()}}
    if not args.tensors:
        out["tensors"] = {"count": len(tensors), "floats": int(sum(v.size for v in tensors.values()))}
    print(json.dumps(out, indent=1, default=str))
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    bad = 0
    for name in args.paths:
        try:
            meta, _ = decode_checkpoint(Path(name).read_bytes())
            print(f"{name}: ok (rev {meta['rev']})")
        except (OSError, CheckpointError) as exc:
            print(f"{name}: INVALID: {exc}")
            bad += 1
    return 1 if bad else 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="saclstm ckpt", description="Inspect and verify saclstm checkpoint files.")
    sub = p.add_subparsers(dest="cmd", required=True)
    ls = sub.add_parser("list", help="the checkpoints in a directory (or one file), newest first")
    ls.add_argument("path")
    ls.set_defaults(fn=cmd_list)
    ins = sub.add_parser("inspect", help="metadata (and with --tensors, every tensor's shape) as JSON")
    ins.add_argument("path")
    ins.add_argument("--tensors", action="store_true")
    ins.set_defaults(fn=cmd_inspect)
    ver = sub.add_parser("verify", help="full validation (structure, finiteness, rev); exit 1 if any is invalid")
    ver.add_argument("paths", nargs="+")
    ver.set_defaults(fn=cmd_verify)
    from deploy.promote import add_parser

    add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return int(args.fn(args))
