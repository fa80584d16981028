"""Fight statistics (fight.py) from observer turns, checked against what the engine itself says: each bot's
own events and its energy, turn by turn; and the same counts from TankRoyale-v0's turns as the tank's brain
keeps from its own events."""

from __future__ import annotations

import numpy as np
import pytest

from actor.bots.tankroyale.engine import Engine, Participant, Setup
from actor.bots.tankroyale.env import TankRoyaleEnv
from actor.bots.tankroyale.fight import Fight, Frame, killer
from actor.bots.tankroyale.opponents import act_on_turn, make
from actor.bots.tankroyale.rules import RAM_DAMAGE
from deploy.tank.battle import RoundRecord, fight_stats

SETUP = Setup(arena_width=400, arena_height=400, number_of_rounds=1)


def play(ours: str, theirs: str, seed: int, max_turns: int = 3000) -> tuple[Fight, list]:
    """One round of two scripted policies on the engine: the fight from its observer turns, and the turns."""
    engine = Engine(SETUP, [Participant(1, ours), Participant(2, theirs)], seed=seed)
    policies = {1: make(ours), 2: make(theirs)}
    for i, p in policies.items():
        p.reset(np.random.default_rng(i))
    turn, fight, turns = engine.new_round(), Fight(), []
    fight.add(Frame.from_turn(turn))
    while not turn.round_ended and len(turns) < max_turns:
        turn = engine.step({b: act_on_turn(p, b, turn, (400, 400)) for b, p in policies.items() if b in turn.bot_states})
        fight.add(Frame.from_turn(turn))
        turns.append(turn)
    return fight, turns


def test_head_on_against_the_sitting_duck_adds_up_with_the_engines_events_and_energies() -> None:
    fight, turns = play("HeadOnBot", "SittingDuck", seed=3)
    assert turns[-1].round_ended and fight.frames == len(turns) + 1 and fight.turns == turns[-1].turn_number
    own = [e for t in turns for e in t.events[1]]  # what bot 1 was told, not the observer's copy
    fired = [e["bullet"] for e in own if e["type"] == "BulletFiredEvent"]
    hit = [e for e in own if e["type"] == "BulletHitBotEvent" and e["bullet"]["ownerId"] == 1]
    us, duck = fight.sides[1], fight.sides[2]
    assert (us.shots, us.hits) == (len(fired), len(hit)) and us.hits > 0
    assert us.dealt == pytest.approx(sum(e["damage"] for e in hit)) == pytest.approx(duck.taken)
    assert (duck.shots, duck.hits, duck.dealt, us.taken) == (0, 0, 0.0, 0.0)
    # Energies, turn by turn: the duck loses exactly what it took; we pay for shots and earn 3p per hit.
    check = Fight()
    for t in turns[:-1]:  # the last turn's states clamp the dead duck at 0
        check.add(Frame.from_turn(t))
        spent = sum(b["power"] for e in own if e["turnNumber"] <= t.turn_number and e["type"] == "BulletFiredEvent"
                    for b in [e["bullet"]])
        earned = sum(3 * e["bullet"]["power"] for e in hit if e["turnNumber"] <= t.turn_number)
        assert t.bot_states[2]["energy"] == pytest.approx(100 - check.sides[2].taken)
        assert t.bot_states[1]["energy"] == pytest.approx(100 - spent + earned)
    assert fight.dead == {2: 1} and fight.survived(1) and fight.ending(1) == "destroyed" and fight.ending(2) == "lost"


def test_a_rammer_deals_and_takes_ram_damage_and_a_ram_kill_is_destroyed() -> None:
    fight, turns = play("RamFire", "SittingDuck", seed=1)
    collisions = sum(1 for t in turns if any(e["type"] == "BotHitBotEvent" for e in t.observer_events))
    bullets = sum(e["damage"] for t in turns for e in t.events[2] if e["type"] == "BulletHitBotEvent")
    assert collisions > 0
    assert fight.sides[2].taken == pytest.approx(bullets + RAM_DAMAGE * collisions)
    assert fight.sides[1].taken == pytest.approx(RAM_DAMAGE * collisions)
    check = Fight()
    for t in turns[:-1]:
        check.add(Frame.from_turn(t))
        assert t.bot_states[2]["energy"] == pytest.approx(100 - check.sides[2].taken)
    if fight.survived(1):
        assert fight.ending(1) == "destroyed" and fight.dead[2] == 1


def test_the_same_counts_from_tankroyale_v0_turns_as_the_brains_own_tally() -> None:
    """Our tank stands and fires 3 whenever it can (the env's default aim follows the enemy's bearing); the
    HeadOnBot shoots back. The brain counts from the events our tank is told; the fight from the observer's."""
    env = TankRoyaleEnv(opponent="HeadOnBot", max_turns=3000, repeat=1)  # every turn seen by the observer
    env.reset(seed=11)
    fight = Fight()
    fight.add(Frame.from_turn(env.turn))
    while True:
        _, _, terminated, truncated, info = env.step(np.array([0.0, 0.0, 0.0, 3.0], np.float32))
        fight.add(Frame.from_turn(env.turn))
        if terminated or truncated:
            break
    tally, ours = info["tally"], fight.sides[1]
    assert (ours.shots, ours.hits) == (tally["shots"], tally["hits"]) and ours.shots > 0
    assert ours.dealt == pytest.approx(tally["dealt"], abs=1e-3) and ours.taken == pytest.approx(tally["taken"])
    assert ours.dealt + ours.taken > 0 and fight.destroyed(1) == tally["destroyed"]
    # Won by the results' word (WonRoundEvent: rank 1), not by survival: with seed 11 both end at energy 0 on
    # turn 185 (our killing hit, then its hit on us refills it to 0: nobody dies), and we rank first.
    want = "lost" if not info["won"] else "destroyed" if tally["destroyed"] else "outlasted"
    assert fight.ending(1, won=info["won"]) == want


def fired(bullet: int, owner: int, turn: int = 2) -> dict:
    return {"type": "BulletFiredEvent", "turnNumber": turn, "bullet": {"bulletId": bullet, "ownerId": owner,
                                                                       "power": 1.0}}


def hit(bullet: int, owner: int, victim: int, energy: float, turn: int = 3) -> dict:
    return {"type": "BulletHitBotEvent", "turnNumber": turn, "bullet": {"bulletId": bullet, "ownerId": owner},
            "victimId": victim, "damage": 4.0, "energy": energy}


def death(victim: int, turn: int = 3) -> dict:
    return {"type": "BotDeathEvent", "turnNumber": turn, "victimId": victim}


def frame(turn: int, *events: dict, bots: tuple[int, ...] = (1, 2)) -> Frame:
    return Frame(1, turn, {b: {"energy": 1.0} for b in bots}, [], list(events))


def test_how_a_round_ended() -> None:
    destroyed = Fight()
    for f in (frame(1), frame(2, fired(1, 1)), frame(3, hit(1, 1, 2, -1.0), death(2))):
        destroyed.add(f)
    assert destroyed.ending(1) == "destroyed" and destroyed.ending(2) == "lost"
    outlasted = Fight()  # hit, but it died of something else (inactivity) a turn later
    for f in (frame(1), frame(2, fired(1, 1)), frame(3, hit(1, 1, 2, 2.0)), frame(4, death(2, 4))):
        outlasted.add(f)
    assert outlasted.dead == {2: None} and outlasted.ending(1) == "outlasted"
    assert outlasted.ending(1, won=False) == "lost"
    ended = Fight()  # nobody died, but the results say we won: we outlasted it
    ended.add(frame(1))
    assert ended.ending(1) == "lost" and ended.ending(1, won=True) == "outlasted"
    ram = [{"type": "BotHitBotEvent", "botId": 2, "victimId": 1, "energy": 5.0},
           {"type": "BotHitBotEvent", "botId": 1, "victimId": 2, "energy": -0.2}]
    assert killer(2, ram) == 1 and killer(1, ram) is None


def test_an_event_told_twice_counts_once() -> None:
    fight = Fight()
    ram = {"type": "BotHitBotEvent", "botId": 1, "victimId": 2, "energy": 50.0}
    twice = {**ram, "botId": 2, "victimId": 1}
    fight.add(frame(2, fired(7, 1), fired(7, 1), ram, twice))
    fight.add(frame(3, hit(7, 1, 2, 40.0), hit(7, 1, 2, 40.0)))
    assert fight.sides[1].to_dict() == {"shots": 1, "hits": 1, "dealt": 4.6, "taken": 0.6}
    assert fight.sides[2].to_dict() == {"shots": 0, "hits": 0, "dealt": 0.6, "taken": 4.6}
    with pytest.raises(ValueError):
        fight.add(Frame(2, 1, {}, [], []))


def test_a_round_record_carries_the_fight_and_the_stats_sum_it_up() -> None:
    fight = Fight()
    for f in (frame(1), frame(2, fired(1, 1), fired(2, 1)), frame(3, hit(1, 1, 2, -1.0), death(2))):
        fight.add(f)
    results = {"type": "RoundEndedEventForObserver", "roundNumber": 1, "turnNumber": 3,
               "results": [{"id": 1, "totalScore": 80, "lastSurvivorBonus": 10}, {"id": 2, "totalScore": 0}]}
    record = RoundRecord.from_event(results, 0, 0, "SittingDuck", {}, fight)
    assert record is not None and record.won
    assert (record.shots, record.hits, record.dealt, record.taken, record.ending) == (2, 1, 4.0, 0.0, "destroyed")
    lost = RoundRecord(0, 0, 2, "SittingDuck", False, 0.0, 80.0, 10, 0.0, 3, 0, 0.0, 16.0, "lost")
    old = {k: v for k, v in lost.__dict__.items() if k not in ("shots", "hits", "dealt", "taken", "ending")}
    stats = fight_stats([record.__dict__, lost.__dict__, old])  # a row of an older log counts for none of it
    assert stats == {"fought": 2, "shots": 5, "hits": 1, "hit_rate": 0.2, "mean_dealt": 2.0, "mean_taken": 8.0,
                     "destroyed_rate": 1.0, "outlasted_rate": 0.0, "win_rate_destroyed": 0.5}
