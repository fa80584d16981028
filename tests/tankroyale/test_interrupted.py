"""Ctrl-C on `tank-train` and `tank-eval`, as a user does it: exit 130, and the summary (tank-train's
summary.json, tank-eval's --out) is written and says `"interrupted": true`. Failed is 1, done is 0."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.procs import Procs, Watch
from tests.tankroyale.test_train import SMALL, config
from tests.test_interrupted import endpoint_of

pytest.importorskip("robocode_tank_royale")
pytestmark = pytest.mark.slow


def test_ctrl_c_on_tank_train_exits_130_and_the_summary_says_interrupted(procs: Procs, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    train: subprocess.Popen = procs.start("train", "deploy", "tank-train", "--run-dir", str(run_dir), "--rounds", "1000",
                                          "--config", str(config(tmp_path)), *SMALL)
    endpoint = endpoint_of(procs, "train")
    watch = Watch(endpoint)
    try:
        watch.wait(lambda h: h["env_steps"] > 0, 180, "the tank's steps at the learner")
    finally:
        watch.close()
    train.send_signal(signal.SIGINT)
    assert train.wait(240) == 130, procs.log("train")[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["completed"] is False
    assert summary["metrics_endpoint"] == endpoint


def test_ctrl_c_on_tank_eval_exits_130_writes_out_and_names_the_logs(procs: Procs, tmp_path: Path) -> None:
    """Two SIGINTs 50 ms apart mid-battle: the first stops it, the second changes nothing. --out is written
    (interrupted), and the one line names the kept logs."""
    from tests.tankroyale.test_eval_honesty import checkpoint

    good, out = checkpoint(tmp_path / "good.sacl"), tmp_path / "eval.json"
    ev: subprocess.Popen = procs.start("eval", "deploy", "tank-eval", "--checkpoint", str(good), "--opponent",
                                       "SittingDuck", "--rounds", "1000", "--no-baselines", "--out", str(out),
                                       env={"TMPDIR": str(tmp_path)})
    deadline = time.monotonic() + 120
    while not any("Connected" in p.read_text(errors="replace") for p in tmp_path.glob("tank-eval-*/saclstm-tank.log")):
        assert time.monotonic() < deadline and ev.poll() is None, procs.log("eval")
        time.sleep(0.05)  # polling a log another process writes: nothing to wait on but time
    for _ in range(2):
        ev.send_signal(signal.SIGINT)
        time.sleep(0.05)  # the spacing under test, not a wait for anything
    assert ev.wait(60) == 130, procs.log("eval")
    report = json.loads(out.read_text())
    assert report["interrupted"] is True and report["completed"] is False and report["results"] == {}
    (logs,) = tmp_path.glob("tank-eval-*")
    lines = [line for line in procs.log("eval").splitlines() if line.strip()]
    assert lines[-1] == f"saclstm tank-eval: stopped; the battles' logs are in {logs}", lines
    assert report["logs"] == str(logs) and (logs / "saclstm-tank.log").exists()
    assert "Traceback" not in procs.log("eval")


class FakeServer:
    url = "ws://127.0.0.1:1"

    def close(self) -> None:
        pass


class FakeChildren:
    """Bot processes that only write their log."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory

    def start(self, name: str, *args: str) -> None:
        (self.dir / f"{name}.log").write_text(f"{name} started\n")

    def stop(self, names: object = None, timeout: float = 0.0) -> dict[str, int]:
        return {}

    def tail(self, name: str, lines: int = 15) -> str:
        return (self.dir / f"{name}.log").read_text()


def fake_arena(error: str | None):  # noqa: ANN201
    class FakeArena:
        """Plays one round (a win) at once, or fails with `error`."""

        def __init__(self, index: int, url: str, secret: object, ours: str, opponents: list[str], setup: object,
                     more: object, on_round, replay: object = None) -> None:  # noqa: ANN001
            self.index, self.ours, self.opponent, self.on_round = index, ours, opponents[0], on_round
            self.error: str | None = None
            self.alive = False

        def start(self) -> FakeArena:
            from deploy.tank.battle import RoundRecord

            if error is None:
                self.on_round(RoundRecord(self.index, 0, 1, self.opponent, True, 10.0, 0.0, 100, 0.0))
            else:
                self.error = error
            return self

        def join(self, timeout: float | None = None) -> None:
            pass

        def stop(self) -> None:
            pass
    return FakeArena


@pytest.fixture
def fake_battles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tank-eval with its battles faked (no server, no processes); temp directories under tmp_path/tmp."""
    import tempfile

    import actor.bots.tankroyale.server as server
    import deploy.tank.evaluate as evaluate

    monkeypatch.setattr(server, "run_server", lambda **_: FakeServer())
    monkeypatch.setattr(evaluate, "Children", FakeChildren)
    monkeypatch.setattr(evaluate, "start_problem", lambda args: None)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    return tmp_path / "tmp"


def test_an_arena_that_fails_is_one_line_that_points_at_the_kept_logs(
        fake_battles: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import deploy.tank.evaluate as evaluate

    monkeypatch.setattr(evaluate, "Arena", fake_arena("arena 0: server closed the connection: code 1011, 'boom'\n"
                                                      "  and a second line"))
    out = tmp_path / "eval.json"
    code = evaluate.main(["--checkpoint", "x.sacl", "--opponent", "SittingDuck", "--rounds", "3", "--no-baselines",
                          "--out", str(out)])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    (logs,) = fake_battles.glob("tank-eval-*")
    assert code == 1 and err == [
        "saclstm tank-eval: saclstm-tank's arena 0: server closed the connection: code 1011, 'boom' "
        f"(see {logs / 'saclstm-tank.log'}; the battles' logs are in {logs})"], err
    assert (logs / "saclstm-tank.log").read_text() == "saclstm-tank started\n"
    report = json.loads(out.read_text())
    assert report["completed"] is False and report["interrupted"] is False and "code 1011" in report["error"]


def test_a_good_evaluation_leaves_no_temp_directory_and_keeps_logs_asked_for(
        fake_battles: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import deploy.tank.evaluate as evaluate

    monkeypatch.setattr(evaluate, "Arena", fake_arena(None))
    args = ["--checkpoint", "x.sacl", "--opponent", "SittingDuck", "--rounds", "1", "--no-baselines"]
    assert evaluate.main([*args, "--out", str(tmp_path / "eval.json")]) == 0
    assert not list(fake_battles.iterdir()), "the temp logs of a good evaluation are removed"
    report = json.loads((tmp_path / "eval.json").read_text())
    assert report["completed"] is True and report["results"]["saclstm-tank"]["wins"] == 1
    assert evaluate.main([*args, "--logs", str(tmp_path / "logs")]) == 0
    assert (tmp_path / "logs" / "saclstm-tank.log").exists(), "--logs DIR is kept"
    assert evaluate.evaluate("x.sacl", "SittingDuck", 1, baselines=False)["saclstm-tank"]["rounds"] == 1
    assert not list(fake_battles.iterdir()), "nor does the library call's"
    capsys.readouterr()
