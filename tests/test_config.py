"""Configuration: TOML, then SACLSTM_* environment, then flags; bad values fail at start with the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from actor.config import ActorConfig
from learner.cli import parser as learner_parser
from learner.config import LearnerConfig
from protocol.config import ConfigError, build, load


def test_layers_flags_over_env_over_toml(tmp_path: Path) -> None:
    toml = tmp_path / "run.toml"
    toml.write_text("[learner]\nutd_ratio = 2.0\nbatch_size = 8\nhidden = 64\n")
    args = learner_parser().parse_args(["--config", str(toml), "--hidden", "32"])
    cfg = load(LearnerConfig, args, {"SACLSTM_BATCH_SIZE": "24", "SACLSTM_UNRELATED": "x"}, "learner")
    assert (cfg.utd_ratio, cfg.batch_size, cfg.hidden) == (2.0, 24, 32)


def test_seed_knob_names_still_work() -> None:
    env = {"SACLSTM_UTD_RATIO": "4", "SACLSTM_BATCH_SIZE": "32", "SACLSTM_SAVE_INTERVAL": "250",
           "SACLSTM_WEIGHTS_PATH": "/tmp/w.ckpt"}
    cfg = load(LearnerConfig, learner_parser().parse_args([]), env, "learner")
    assert (cfg.utd_ratio, cfg.batch_size, cfg.save_interval, cfg.weights_path) == (4.0, 32, 250, "/tmp/w.ckpt")
    assert build(ActorConfig, {"eval_mode": "1"}).eval_mode is True


@pytest.mark.parametrize("key,value,words", [
    ("batch_size", "sixteen", "batch_size"),
    ("utd_ratio", "0", "never trains"),
    ("overlap", "32", "seq_len-1"),
    ("capacity", "100", "learning_starts"),
    ("opponent_policy", "forget", "keep, clear"),
    ("capacity", "20", "at least 2 chunks (64)"),
    ("max_steps_per_pass", "0", "max_steps_per_pass = 0"),
    ("max_drain", "0", "max_drain = 0"),
    ("torso", "twin", "separate, shared"),
    ("bogus_key", "1", "unknown key"),
])
def test_bad_values_name_key_and_reason(key: str, value: str, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        build(LearnerConfig, {key: value})
    assert words in str(info.value)


def test_bad_toml_is_a_clear_error(tmp_path: Path) -> None:
    toml = tmp_path / "bad.toml"
    toml.write_text("[learner\nhidden = ")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load(LearnerConfig, learner_parser().parse_args(["--config", str(toml)]), {}, "learner")


def test_actor_tuple_fields_parse_from_text() -> None:
    assert build(ActorConfig, {"obs_mask": "2"}).obs_mask == (2,)
    assert build(ActorConfig, {"obs_mask": [0, 1]}).obs_mask == (0, 1)
    with pytest.raises(ConfigError, match="flow"):
        build(ActorConfig, {"flow": "sometimes"})


@pytest.mark.parametrize("key", ["threads", "send_state"])
def test_a_retired_actor_key_fails_at_start_with_its_reason(key: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """ActorConfig.threads (it did nothing) and send_state (state_every asks for the state) are gone: a config
    that still sets one is told so, by key and reason, from a TOML file and from a flag alike."""
    from actor.cli import parser as actor_parser
    from protocol.config import load_or_exit

    with pytest.raises(ConfigError, match=f"{key} = 1: retired: .*remove the key"):
        build(ActorConfig, {key: 1})
    toml = tmp_path / "old.toml"
    toml.write_text(f"[actor]\n{key} = 1\n")
    flag = "--" + key.replace("_", "-")
    for argv in (["--config", str(toml)], [flag, "1"]):
        with pytest.raises(SystemExit) as exit_:
            load_or_exit(ActorConfig, actor_parser().parse_args(argv), "actor", "saclstm actor")
        assert exit_.value.code == 2 and ": retired: " in capsys.readouterr().err
    assert flag not in actor_parser().format_help()  # hidden: nobody is offered it


def test_online_targets_need_a_shared_torso() -> None:
    with pytest.raises(ConfigError, match="target_torso.*torso = shared only"):
        build(LearnerConfig, {"torso": "separate", "target_torso": "false"})
    assert build(LearnerConfig, {"target_torso": "false"}).target_torso is False


def test_replay_and_config_hold_one_capacity_rule() -> None:
    """The learner's config and replay's constructor refuse the same capacities (they had drifted: 2 chunks vs 1)."""
    from learner.replay import SequenceReplay

    with pytest.raises(ConfigError):
        build(LearnerConfig, {"capacity": "63", "seq_len": "32", "learning_starts": "16", "batch_size": "16"})
    with pytest.raises(ValueError, match="at least 2 chunks"):
        SequenceReplay(capacity=63, seq_len=32, overlap=0, obs_dim=1, act_dim=1)
    build(LearnerConfig, {"capacity": "64", "seq_len": "32", "learning_starts": "16", "batch_size": "16"})
    SequenceReplay(capacity=64, seq_len=32, overlap=0, obs_dim=1, act_dim=1)


def test_every_update_setting_reaches_the_update_from_the_learner_config() -> None:
    """learner.model.sac_config is the one mapping from LearnerConfig to SACConfig: a setting added to the
    update, or renamed on one side, must not silently keep its default in the service."""
    from dataclasses import fields

    from learner.model import sac_config
    from learner.sac import SACConfig

    changed = {"gamma": 0.9, "tau": 0.01, "actor_lr": 1e-4, "critic_lr": 2e-4, "alpha_lr": 5e-4, "init_alpha": 0.5,
               "burn_in": 4, "grad_clip": 1.0, "amp": True, "use_stored_state": True, "torso": "separate",
               "target_torso": True, "memory_horizon": 8, "recall_weight": 0.5, "target_entropy": -0.5,
               "action_prior": 0.1, "n_step": 3, "action_target_weight": 2.0}
    assert set(changed) == {f.name for f in fields(SACConfig)}, "a new update setting: give it a value here"
    cfg = LearnerConfig(**changed, seq_len=64, overlap=32)
    mapped = sac_config(cfg)
    assert {name: getattr(mapped, name) for name in changed} == changed


def test_the_update_has_the_learners_defaults() -> None:
    """One default per setting: SACConfig built without arguments is the learner's default update (a default
    re-declared in SACConfig, e.g. recall_weight 0 against the learner's 10, fails here)."""
    from dataclasses import fields

    from learner.sac import SACConfig

    update, learner = SACConfig(), LearnerConfig()
    assert {f.name: getattr(update, f.name) for f in fields(SACConfig)} == {
        f.name: getattr(learner, f.name) for f in fields(SACConfig)}


@pytest.mark.parametrize("path", sorted(Path(__file__).resolve().parents[1].glob("deploy/*.toml")), ids=lambda p: p.name)
def test_every_shipped_config_builds(path: Path) -> None:
    """The TOML files under deploy/ are what users start from: each table must build (a misspelt key or a value
    out of range fails here, not in a user's first run)."""
    import tomllib

    from actor.bots.tankroyale.brain import TankControls, TankRewards
    from deploy.launcher import RunConfig
    from deploy.tank.train import BattleConfig

    tables = tomllib.loads(path.read_text())
    kinds = {"learner": LearnerConfig, "actor": ActorConfig, "run": RunConfig, "battle": BattleConfig,
             "tank": TankRewards, "controls": TankControls}
    assert set(tables) <= set(kinds), f"{path.name}: a table no command reads: {set(tables) - set(kinds)}"
    assert set(tables) & set(kinds), f"{path.name} has none of {sorted(kinds)}"
    for name, kind in kinds.items():
        if name in tables:
            build(kind, tables[name])


def test_a_network_whose_weights_frame_would_pass_64_mib_fails_at_start() -> None:
    """SPEC.md, Sockets: a bot must accept weights frames up to 64 MiB, so a learner never publishes a larger one.
    8 H^2 floats alone pass it at hidden 1500; configured dims count too (D = 65536 at hidden 256)."""
    for kwargs in ({"hidden": 1500}, {"hidden": 256, "obs_dim": 65536, "act_dim": 1}):
        with pytest.raises(ConfigError, match=r"hidden = .*weights frame would be .* MiB, over the 64 MiB"):
            LearnerConfig(**kwargs)
    assert LearnerConfig(hidden=1400).weights_frame_bytes(1, 1) <= 64 * 2**20
    LearnerConfig(hidden=128, obs_dim=65536, act_dim=1)  # 33 MiB
