"""The numbers and pure formulas of Robocode Tank Royale, as the official server computes them.

Every constant and formula here is taken from the official server (repository robocode-dev/tank-royale,
server/src/main/kotlin/dev/robocode/tankroyale/server/): `rules/rules.kt` (constants), `rules/math.kt`
(speed, turn limits, damage, gun heat), `model/math.kt` (angles and collision geometry) and the
physics/scoring pages of the official docs. The engine (engine.py) inlines a few of these in its hot loops;
this module stays the reference the tests check against.
"""

from __future__ import annotations

import math

# --- rules/rules.kt -------------------------------------------------------------------------------------------
ARENA_MIN_SIZE = 400
ARENA_MAX_SIZE = 5000
MIN_GUN_COOLING_RATE = 0.1
MAX_GUN_COOLING_RATE = 3.0
INITIAL_BOT_ENERGY = 100.0
INITIAL_DROID_ENERGY = 120.0
INITIAL_GUN_HEAT = 3.0
BOT_BOUNDING_CIRCLE_DIAMETER = 36
BOT_BOUNDING_CIRCLE_RADIUS = BOT_BOUNDING_CIRCLE_DIAMETER / 2.0
RADAR_RADIUS = 1200.0
MAX_TURN_RATE = 10.0
MAX_GUN_TURN_RATE = 20.0
MAX_RADAR_TURN_RATE = 45.0
MAX_FORWARD_SPEED = 8.0
MAX_BACKWARD_SPEED = -8.0
MIN_FIREPOWER = 0.1
MAX_FIREPOWER = 3.0
ACCELERATION = 1.0
DECELERATION = -2.0
RAM_DAMAGE = 0.6
BULLET_HIT_ENERGY_GAIN_FACTOR = 3
SCORE_PER_SURVIVAL = 50.0
BONUS_PER_LAST_SURVIVOR = 10.0
SCORE_PER_BULLET_DAMAGE = 1.0
BONUS_PER_BULLET_KILL = 0.20
SCORE_PER_RAM_DAMAGE = 2.0
BONUS_PER_RAM_KILL = 0.30
INACTIVITY_DAMAGE = 0.1

# --- model/math.kt: Double.isNearTo ----------------------------------------------------------------------------
NEAR_EPSILON = 1e-6

# --- core/ModelUpdater.kt / CollisionDetector.kt: start grid and pre-checks --------------------------------------
START_CELL_SIZE = 50  # the arena is split into cells of about 50x50; one bot per cell at round start


def clamp(value: float, low: float, high: float) -> float:
    """rules/math.kt clamp: max(low, min(high, value))."""
    return max(low, min(high, value))


def clamp_speed(speed: float) -> float:
    return clamp(speed, MAX_BACKWARD_SPEED, MAX_FORWARD_SPEED)


def clamp_firepower(firepower: float) -> float:
    return clamp(firepower, MIN_FIREPOWER, MAX_FIREPOWER)


def _sign(value: float) -> float:
    """Kotlin's Double.sign: -1.0, 0.0 (keeping the zero's sign) or 1.0."""
    if value > 0.0:
        return 1.0
    if value < 0.0:
        return -1.0
    return value


def calc_new_bot_speed(current_speed: float, target_speed: float) -> float:
    """rules/math.kt calcNewBotSpeed (the version after fixes #85 and 0.24.4).

    Acceleration 1, deceleration 2, |speed| <= 8. Two official quirks are kept on purpose: a target of exactly 0
    stops a moving bot in one turn (sign(0) differs from sign(speed)), and crossing zero from speed v yields
    -(1 - v/2) even for v > 2 (8 -> target -8 gives 3). Classic Robocode would decelerate by 2 instead.
    """
    if current_speed < 0.0:
        return -calc_new_bot_speed(-current_speed, -target_speed)
    if current_speed > 0.0:
        if _sign(current_speed) == _sign(target_speed):
            diff = target_speed - current_speed
            if diff >= 0:
                return min(current_speed + min(diff, ACCELERATION), MAX_FORWARD_SPEED)
            return max(current_speed + max(diff, DECELERATION), MAX_BACKWARD_SPEED)
        if target_speed == 0.0:
            return 0.0
        deceleration_time = current_speed / -DECELERATION
        return (1 - deceleration_time) * -ACCELERATION
    diff = target_speed - current_speed
    acceleration = min(abs(diff), ACCELERATION)
    if diff >= 0:
        return min(current_speed + acceleration, MAX_FORWARD_SPEED)
    return max(current_speed - acceleration, MAX_BACKWARD_SPEED)


def calc_max_turn_rate(speed: float) -> float:
    """rules/math.kt: 10 - 0.75 * |speed| (speed clamped to [-8, 8])."""
    return MAX_TURN_RATE - 0.75 * abs(clamp_speed(speed))


def limit_turn_rate(turn_rate: float, speed: float) -> float:
    max_rate = calc_max_turn_rate(speed)
    return clamp(turn_rate, -max_rate, max_rate)


def limit_gun_turn_rate(rate: float) -> float:
    return clamp(rate, -MAX_GUN_TURN_RATE, MAX_GUN_TURN_RATE)


def limit_radar_turn_rate(rate: float) -> float:
    return clamp(rate, -MAX_RADAR_TURN_RATE, MAX_RADAR_TURN_RATE)


def calc_wall_damage(speed: float) -> float:
    """rules/math.kt: max(|speed| / 2 - 1, 0) (the docs' collision page says |v| - 1; the code and physics page win)."""
    return max(abs(clamp_speed(speed)) / 2 - 1, 0.0)


def calc_bullet_speed(firepower: float) -> float:
    """rules/math.kt: 20 - 3 * firepower (19.7 at 0.1, 11 at 3)."""
    return 20 - 3 * clamp_firepower(firepower)


def calc_bullet_damage(firepower: float) -> float:
    """rules/math.kt: 4 * firepower, plus 2 * (firepower - 1) above 1."""
    damage = 4 * clamp_firepower(firepower)
    if firepower > 1:
        damage += 2 * (firepower - 1)
    return damage


def kill_power(energy: float) -> float:
    """The least firepower whose bullet takes `energy` away (calc_bullet_damage solved for the power), before
    clamping: energy / 4 up to 4 points, (energy + 2) / 6 above."""
    return energy / 4 if energy <= 4 else (energy + 2) / 6


def calc_gun_heat(firepower: float) -> float:
    """rules/math.kt: 1 + firepower / 5."""
    return 1 + clamp_firepower(firepower) / 5


MIN_BULLET_SPEED = calc_bullet_speed(MAX_FIREPOWER)
MAX_BULLET_SPEED = calc_bullet_speed(MIN_FIREPOWER)
BULLET_MAX_BOUNDING_CIRCLE_DIAMETER = 2 * MAX_BULLET_SPEED


def normalize_absolute_degrees(angle: float) -> float:
    """model/math.kt: into [0, 360)."""
    return angle % 360.0


def normalize_relative_degrees(angle: float) -> float:
    """model/math.kt: into [-180, 180) (Kotlin's % keeps the dividend's sign, as math.fmod does)."""
    a = math.fmod(angle, 360.0)
    if a >= 0:
        return a if a < 180 else a - 360
    return a if a >= -180 else a + 360


def direction_to(x: float, y: float, tx: float, ty: float) -> float:
    """model/math.kt angle(): absolute direction in degrees from (x, y) to (tx, ty)."""
    return math.degrees(math.atan2(ty - y, tx - x)) % 360.0


def is_disabled_energy(energy: float) -> bool:
    """model/IBot.kt: alive (energy >= 0) and energy near 0 (|energy| < 1e-6): the bot cannot move or fire."""
    return 0.0 <= energy < NEAR_EPSILON


def round_to_int(value: float) -> int:
    """Kotlin's Double.roundToInt (Math.round: halves round up), used for the results tables."""
    return math.floor(value + 0.5)


def is_point_on_line(px: float, py: float, x1: float, y1: float, x2: float, y2: float) -> bool:
    """model/math.kt isPointOnLine: cross product near 0 (1e-6) and within the segment's extent."""
    dxl = x2 - x1
    dyl = y2 - y1
    cross = (px - x1) * dyl - (py - y1) * dxl
    if not abs(cross) < NEAR_EPSILON:
        return False
    if abs(dxl) >= abs(dyl):
        return x1 <= px <= x2 if dxl > 0 else x2 <= px <= x1
    return y1 <= py <= y2 if dyl > 0 else y2 <= py <= y1


def is_line_intersecting_circle(x1: float, y1: float, x2: float, y2: float, cx: float, cy: float, r: float) -> bool:
    """model/math.kt isLineIntersectingCircle (Jeff Thompson's line/circle test; touching counts)."""
    r2 = r * r
    dx = x1 - cx
    dy = y1 - cy
    if dx * dx + dy * dy <= r2:
        return True
    dx = x2 - cx
    dy = y2 - cy
    if dx * dx + dy * dy <= r2:
        return True
    dx = x2 - x1
    dy = y2 - y1
    len2 = dx * dx + dy * dy
    if len2 == 0.0:
        return False  # Kotlin divides 0/0 into NaN, and NaN is never on the line
    dot = ((cx - x1) * dx + (cy - y1) * dy) / len2
    px = x1 + dot * dx
    py = y1 + dot * dy
    if not is_point_on_line(px, py, x1, y1, x2, y2):
        return False
    dx = px - cx
    dy = py - cy
    return dx * dx + dy * dy <= r2


def is_line_intersecting_line(ax1: float, ay1: float, ax2: float, ay2: float,
                              bx1: float, by1: float, bx2: float, by2: float) -> bool:
    """model/math.kt isLineIntersectingLine (Franklin Antonio's test, with Keith Woodward's collinear case)."""
    ax = ax2 - ax1
    ay = ay2 - ay1
    bx = bx1 - bx2
    by = by1 - by2
    cx = ax1 - bx1
    cy = ay1 - by1
    alpha = by * cx - bx * cy
    denom = ay * bx - ax * by
    if denom > 0 and (alpha < 0 or alpha > denom):
        return False
    if denom < 0 and (alpha > 0 or alpha < denom):
        return False
    beta = ax * cy - ay * cx
    if denom > 0 and (beta < 0 or beta > denom):
        return False
    if denom < 0 and (beta > 0 or beta < denom):
        return False
    if denom == 0.0:
        return _collinear_overlap(ax1, ay1, ax2, ay2, bx1, by1, bx2, by2)
    return True


def _between(v: float, a: float, b: float) -> bool:
    return a <= v <= b or b <= v <= a


def _collinear_overlap(ax1: float, ay1: float, ax2: float, ay2: float,
                       bx1: float, by1: float, bx2: float, by2: float) -> bool:
    if ax1 * (ay2 - by1) + ax2 * (by1 - ay1) + bx1 * (ay1 - ay2) != 0.0:
        return False
    if _between(ax1, bx1, bx2) or _between(ax2, bx1, bx2) or _between(bx1, ax1, ax2):
        return _between(ay1, by1, by2) or _between(ay2, by1, by2) or _between(by1, ay1, ay2)
    return False


def is_circle_intersecting_sector(cx: float, cy: float, cr: float, sx: float, sy: float, sr: float,
                                  start_deg: float, end_deg: float) -> bool:
    """model/math.kt isCircleIntersectingCircleSector: the arc runs counter-clockwise from start to end (< 180°)."""
    vx = cx - sx
    vy = cy - sy
    reach = sr + cr
    if vx * vx + vy * vy > reach * reach:
        return False
    a = math.radians(start_deg)
    x0 = math.cos(a) * sr
    y0 = math.sin(a) * sr
    b = math.radians(end_deg)
    x1 = math.cos(b) * sr
    y1 = math.sin(b) * sr
    if not (x0 * vy <= y0 * vx) and (x1 * vy <= y1 * vx):
        return True
    return (is_line_intersecting_circle(sx, sy, sx + x0, sy + y0, cx, cy, cr)
            or is_line_intersecting_circle(sx, sy, sx + x1, sy + y1, cx, cy, cr))


def constrain_bot_position(old_x: float, old_y: float, x: float, y: float,
                           width: float, height: float) -> tuple[float, float]:
    """CollisionDetector.constrainBotPosition: keep the bounding circle inside, sliding along the move's line."""
    r = BOT_BOUNDING_CIRCLE_RADIUS
    new_x = x
    new_y = y
    if x - r < 0:
        new_x = r
        dx = x - old_x
        if dx != 0.0:
            new_y = old_y + (y - old_y) * (new_x - old_x) / dx
    elif x + r > width:
        new_x = width - r
        dx = x - old_x
        if dx != 0.0:
            new_y = old_y + (y - old_y) * (new_x - old_x) / dx
    if y - r < 0:
        new_y = r
        dy = y - old_y
        if dy != 0.0:
            new_x = old_x + (x - old_x) * (new_y - old_y) / dy
    elif y + r > height:
        new_y = height - r
        dy = y - old_y
        if dy != 0.0:
            new_x = old_x + (x - old_x) * (new_y - old_y) / dy
    return new_x, new_y


def is_ramming(x: float, y: float, direction: float, speed: float, victim_x: float, victim_y: float) -> bool:
    """CollisionDetector.isRamming: moving forward with the victim ahead (|bearing| < 90), or backward with it behind."""
    bearing = normalize_relative_degrees(math.degrees(math.atan2(victim_y - y, victim_x - x)) - direction)
    return (speed > 0 and -90 < bearing < 90) or (speed < 0 and (bearing < -90 or bearing > 90))
