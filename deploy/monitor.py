"""`saclstm monitor [ENDPOINT]`: watch a learner's metrics socket, live, or as JSON lines for scripts."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from deploy.watch import HealthWatch
from protocol.health import Health, HealthReader


def _table(h: Health) -> Any:
    from rich.console import Group
    from rich.table import Table

    ret = h.recent_return
    head = Table.grid(padding=(0, 3))
    head.add_row(f"uptime {h.uptime_s:.0f} s", f"weights v{h.version}", f"env steps {h.env_steps:,}",
                 f"grad steps {h.grad_steps:,}", f"UTD {h.utd_achieved:.2f} / {h.utd_target:g}",
                 f"ingest {h.ingest_tps:,.0f}/s", f"return {ret:.1f}" if ret is not None else "return -")
    # What flow control holds: the achieved UTD of the last ~2,000 steps against the target, and what it cost the
    # rate-limited actors (seconds held back, all together).
    head.add_row(utd_window_cell(h),
                 f"actors held back {h.held_s:,.1f} s", f"debt {h.debt:,.0f}", f"untrained {h.untrained_steps:,}")
    saver = h.saver
    head.add_row(f"replay {h.replay.transitions:,}/{h.replay.capacity:,}", f"lag p50 {h.policy_lag.p50:.0f} "
                 f"max {h.policy_lag.max:.0f}", f"rejects {h.rejects or 'none'}",
                 f"saves {saver.saves} failed {saver.failures}" if saver else "checkpoints off")
    actors = Table(title="actors")
    for col in ("actor", "state", "last seen", "sent", "received", "dropped", "rejected", "episodes", "held", "labels late"):
        actors.add_column(col, justify="right" if col not in ("actor", "state") else "left")
    for a in h.actors:
        state = "[green]alive" if a.alive else ("bye" if a.bye else "[red]DEAD")
        actors.add_row(a.sender, state, f"{a.age_s:.1f} s", f"{a.sent:,}", f"{a.received:,}",
                       f"{a.dropped:,}", f"{a.rejected:,}", str(a.episodes), f"{a.held_s:,.1f} s",
                       f"{a.labels_late:,}")
    return Group(head, actors)


def utd_window_cell(h: Health) -> str:
    """The windowed UTD, and while the window is not yet what it will be, that it is warming up: no gradient step
    yet, or fewer steps in it than it will span (learner/metrics.py's UtdWindow starts at training's start)."""
    from learner.metrics import UTD_WINDOW_STEPS

    if h.utd_window_steps <= 0:
        return f"UTD window warming up (no training yet) / {h.utd_target:g}"
    figure = f"UTD last {h.utd_window_steps:,} steps {h.utd_window:.2f} / {h.utd_target:g}"
    return figure + (" (warming up)" if h.utd_window_steps < UTD_WINDOW_STEPS else "")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="saclstm monitor", description="Watch a learner's metrics: a live dashboard, or "
                                "--json for one JSON object per line (health every second, training passes).")
    p.add_argument("endpoint", nargs="?", default="tcp://127.0.0.1:5557", help="the learner's metrics endpoint "
                   "(default: %(default)s, a learner's own default; `saclstm run` and `tank-train` print theirs at "
                   "start and keep it in summary.json)")
    p.add_argument("--json", action="store_true", help="print JSON lines instead of the dashboard")
    p.add_argument("--passes", action="store_true", help="with --json: also print each training pass")
    p.add_argument("--count", type=int, default=0, help="stop after this many health maps (0 = never)")
    p.add_argument("--timeout", type=float, default=0.0, help="give up after this many silent seconds (0 = never)")
    p.add_argument("--curve-server-key", default="", help="the learner's public key file, when CURVE is on")
    p.add_argument("--curve-secret", default="", help="this monitor's secret key file (its public key must be allowed)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    keys = None
    if args.curve_server_key:
        from protocol.curve import ClientKeys, KeyFileError

        try:
            keys = ClientKeys.load(args.curve_server_key, args.curve_secret)
        except KeyFileError as exc:
            print(f"saclstm monitor: {exc}", file=sys.stderr)
            return 2
    reader = HealthReader(lambda text: print(f"saclstm monitor: {text}", file=sys.stderr))
    watch = HealthWatch(args.endpoint, reader, keys, passes=args.passes)
    seen = 0
    live = None
    if not args.json:
        from rich.live import Live

        live = Live(f"waiting for {args.endpoint} ...", refresh_per_second=4)
        live.start()
    try:
        while args.count == 0 or seen < args.count:
            got = watch.poll(250)
            if not got and args.timeout and time.monotonic() - watch.heard > args.timeout:
                print(f"saclstm monitor: nothing from {args.endpoint} for {args.timeout:g} s", file=sys.stderr)
                return 1
            for topic, data in got:  # a health map that did not decode is not here: reported once per reason
                if topic == "health":
                    seen += 1
                if args.json:  # the map as the learner sent it (keys a newer learner adds included), once it decodes
                    print(json.dumps({"topic": topic, **data}), flush=True)
                elif topic == "health" and live is not None:
                    live.update(_table(reader.latest))
                if args.count and seen >= args.count:
                    break
    except KeyboardInterrupt:
        pass
    finally:
        if live is not None:
            live.stop()
        watch.close()
    return 0
