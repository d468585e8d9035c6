"""Value checkers of the config: each takes the dotted key and the value, returns the
cleaned value or raises ``ConfigError`` naming the key, the value and what is accepted."""
from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from meanfield.errors import ConfigError

Checker = Callable[[str, Any], Any]


# The longest value a message shows (a scan list of thousands is cut, and so one line).
SHOWN_CHARACTERS = 120


def describe(value: Any) -> str:
    """``repr(value)`` for a message, cut to ``SHOWN_CHARACTERS``; an integer too long to
    print (Python refuses over 4300 digits) is described by its number of digits."""
    try:
        text = repr(value)
    except ValueError:  # int -> str beyond sys.get_int_max_str_digits()
        digits = (f"about {int(value.bit_length() * math.log10(2)) + 1} digits"
                  if isinstance(value, int) else "numbers too long to show")
        return f"<a value with {digits}>"
    return text if len(text) <= SHOWN_CHARACTERS else text[:SHOWN_CHARACTERS] + "..."


def suggest(name: str, valid: list[str] | tuple[str, ...]) -> str:
    """``valid: 'a', 'b'`` plus the nearest valid name to ``name``, if one is close."""
    close = difflib.get_close_matches(name[:SHOWN_CHARACTERS], list(valid), n=1, cutoff=0.5)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return f"valid: {', '.join(repr(v) for v in valid)}{hint}"


def unknown_name(key: str, name: Any, valid, what: str = "value") -> ConfigError:
    """ConfigError for a name that is not one of ``valid`` (with the nearest suggestion)."""
    return ConfigError(f"{key} = {describe(name)} is not a known {what}; "
                       f"{suggest(name if isinstance(name, str) else describe(name), valid)}",
                       key)


def is_number(value: Any) -> bool:
    """Whether ``value`` is a real number: int, float or a numpy scalar such as
    ``np.int64`` or ``np.float32`` (``numbers.Real``), but not a bool (``np.bool_`` is not
    a ``numbers.Real``)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def number(key: str, value: Any) -> float:
    """Any real number (int, float, numpy scalar; not a bool) as a Python float; an
    integer beyond the float range as +-inf (refused by the finite checkers)."""
    if not is_number(value):
        raise ConfigError(f"{key} = {describe(value)} must be a number", key)
    try:
        return float(value)
    except OverflowError:  # an int beyond 1.8e308
        return math.inf if value > 0 else -math.inf


def finite_number(key: str, value: Any, *, minimum: float | None = None,
                  strict: bool = False, maximum: float | None = None) -> float:
    """A finite float, optionally bounded below (``strict``: exclusive) and above."""
    x = number(key, value)
    if not math.isfinite(x):
        raise ConfigError(f"{key} = {describe(value)} must be a finite number", key)
    if minimum is not None and (x <= minimum if strict else x < minimum):
        rel = ">" if strict else ">="
        raise ConfigError(f"{key} = {describe(value)} must be {rel} {minimum:g}", key)
    if maximum is not None and x > maximum:
        raise ConfigError(f"{key} = {describe(value)} must be <= {maximum:g}", key)
    return x


# Every integer of a config (counts, seeds) is stored in the result as a 64-bit integer.
MAX_INTEGER = 2**63 - 1


def integer(key: str, value: Any, *, minimum: int | None = None,
            maximum: int | None = None) -> int:
    """An int (a float with an integer value is not accepted: resolutions are counts),
    optionally bounded."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"{key} = {describe(value)} must be an integer"
                          + (f" >= {minimum}" if minimum is not None else ""), key)
    value = int(value)  # a numpy integer as a Python int
    if maximum is None and abs(value) > MAX_INTEGER:
        raise ConfigError(f"{key} = {describe(value)} is beyond the 64-bit integers that a "
                          f"result stores (|value| <= {MAX_INTEGER})", key)
    if minimum is not None and value < minimum:
        raise ConfigError(f"{key} = {describe(value)} must be an integer >= {minimum}", key)
    if maximum is not None and value > maximum:
        raise ConfigError(f"{key} = {describe(value)} must be an integer <= {maximum}", key)
    return value


# The largest beta accepted anywhere (model.beta, the studies' beta lists and ranges). The
# attention weight e^{beta (<x, y> - 1)} inherits the rounding of the cosine <x, y>
# (2^-53 ~ 1.1e-16) multiplied by beta: a relative error of 1.1e-8 at beta = 1e8, about
# the steppers' tolerances, and of order 1 by beta ~ 1e16 (where the phase diagram's
# compiled engine fails and most_unstable_mode cannot even list its modes).
MAX_BETA = 1e8


def beta(key: str, value: Any) -> float:
    """A temperature: a finite number in [0, ``MAX_BETA``]."""
    x = finite_number(key, value, minimum=0.0)
    if x > MAX_BETA:
        raise ConfigError(f"{key} = {describe(value)}: beta is accepted up to {MAX_BETA:g} "
                          "(the attention weight e^(beta (<x, y> - 1)) carries beta times "
                          "the cosine's rounding, 1.1e-16: 1e-8 at the limit, meaningless by "
                          "1e16)", key)
    return x


def betas(values: list[float], key: str) -> list[float]:
    """``values`` (a checked list of beta) with each at most ``MAX_BETA``."""
    for i, v in enumerate(values):
        beta(f"{key}[{i}]", v)
    return values


def positive(key: str, value: Any) -> float:
    """A finite number > 0."""
    return finite_number(key, value, minimum=0.0, strict=True)


def kappa(key: str, value: Any) -> float:
    """A number > 0, or "inf" (no noise) as ``math.inf``."""
    if isinstance(value, str):
        if value.strip().lower() in ("inf", "infinity"):
            return math.inf
        raise ConfigError(f"{key} = {describe(value)} must be a number > 0 or \"inf\" (no noise)", key)
    x = number(key, value)
    if math.isnan(x) or x <= 0:
        raise ConfigError(f"{key} = {describe(value)} must be a number > 0 or \"inf\" (no noise)", key)
    return x


def auto_or_positive(key: str, value: Any) -> float | str:
    """"auto" or a finite number > 0."""
    if isinstance(value, str) and value == "auto":
        return "auto"
    if isinstance(value, str):
        raise ConfigError(f"{key} = {describe(value)} must be \"auto\" or a number > 0", key)
    return finite_number(key, value, minimum=0.0, strict=True)


def auto_or_count(key: str, value: Any) -> int | str:
    """"auto" or an integer >= 2."""
    if isinstance(value, str) and value == "auto":
        return "auto"
    if isinstance(value, str):
        raise ConfigError(f"{key} = {describe(value)} must be \"auto\" or an integer >= 2", key)
    return integer(key, value, minimum=2)


def boolean(key: str, value: Any) -> bool:
    """true or false (a numpy bool as a Python bool)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ConfigError(f"{key} = {describe(value)} must be true or false", key)
    return bool(value)


def choice(valid: tuple[str, ...]) -> Checker:
    """A checker accepting exactly the names of ``valid``."""
    def check(key: str, value: Any) -> str:
        # (a str first: ``in`` compares with ==, which a numpy array answers elementwise)
        if not isinstance(value, str) or value not in valid:
            raise unknown_name(key, value, valid)
        return value
    return accepting(f"one of {', '.join(repr(v) for v in valid)}", check)


# What a checker accepts, in words, for the config reference (meanfield.config.reference):
# the factories below set it from their own bounds, so the page cannot drift from them; a
# checker without it is described by the first line of its docstring.
def accepting(text: str, check: Checker) -> Checker:
    """``check`` with the attribute ``accepts = text`` (what it accepts, in words)."""
    check.accepts = text
    return check


def shown_number(x: float) -> str:
    """A bound as the reference shows it: integers exactly (a seed's bound is 2^63 - 1),
    floats as ``%g`` without the exponent's plus sign and zeros (1e8, 1e-14)."""
    if isinstance(x, int):
        return str(x)
    text = f"{x:g}"
    mantissa, _, exponent = text.partition("e")
    return f"{mantissa}e{int(exponent)}" if exponent else text


def _bounds(minimum: float | None, strict: bool, maximum: float | None) -> str:
    shown = shown_number
    parts = ([f"{'>' if strict else '>='} {shown(minimum)}"] if minimum is not None
             else []) + ([f"<= {shown(maximum)}"] if maximum is not None else [])
    return " and ".join(parts)


def number_in(minimum: float | None = None, strict: bool = False,
            maximum: float | None = None) -> Checker:
    """The checker of a finite number within the bounds of ``finite_number``."""
    bounds = _bounds(minimum, strict, maximum)
    return accepting(f"a finite number{' ' + bounds if bounds else ''}",
                     lambda k, v: finite_number(k, v, minimum=minimum, strict=strict,
                                                maximum=maximum))


def integer_in(minimum: int | None = None, maximum: int | None = None) -> Checker:
    """The checker of an integer within the bounds of ``integer``."""
    bounds = _bounds(minimum, False, maximum)
    return accepting(f"an integer{' ' + bounds if bounds else ''}",
                     lambda k, v: integer(k, v, minimum=minimum, maximum=maximum))


def unit_vector(key: str, value: Any, dim: int, tolerance: float) -> list[float]:
    """A list of ``dim`` finite numbers of length 1 to ``tolerance`` (not normalised)."""
    what = "unit 3-vector [x, y, z]" if dim == 3 else f"unit {dim}-vector"
    if (not isinstance(value, (list, tuple)) or len(value) != dim
            or not all(is_number(v) for v in value)):
        raise ConfigError(f"{key} = {describe(value)} must be a {what}", key)
    vec = [number(key, v) for v in value]
    if not all(math.isfinite(v) for v in vec):
        raise ConfigError(f"{key} = {describe(value)} must be a finite {what}", key)
    norm = math.sqrt(sum(v * v for v in vec))
    if abs(norm - 1) > tolerance:
        raise ConfigError(f"{key} = {describe(value)} has length {norm:.12g}, not 1: give a "
                          f"{what} (it is not normalised for you)", key)
    return vec


def finite_vector(key: str, value: Any, dim: int) -> list[float]:
    """A list of ``dim`` finite numbers (as floats)."""
    if (not isinstance(value, (list, tuple)) or len(value) != dim
            or not all(is_number(v) for v in value)):
        raise ConfigError(f"{key} = {describe(value)} must be a list of {dim} numbers "
                          f"(domain.dim = {dim})", key)
    vec = [number(key, v) for v in value]
    if not all(math.isfinite(v) for v in vec):
        raise ConfigError(f"{key} = {describe(value)} must be finite", key)
    return vec


def threads(key: str, value: Any) -> int | str:
    """"auto" or an integer >= 1."""
    if isinstance(value, str) and value == "auto":
        return "auto"
    return integer(key, value, minimum=1)


def path(key: str, value: Any) -> str | None:
    """A non-empty file path as a string (None: absent)."""
    if value is None:
        return None
    if not isinstance(value, (str, Path)) or str(value) == "":
        raise ConfigError(f"{key} = {describe(value)} must be a file path (a non-empty string)", key)
    return str(value)


RANGE_KEYS = ("start", "stop", "num")
# Phrases of what the scan checkers accept (``accepting``: the config reference).
LIST_TEXT = "a non-empty list of numbers"
INCREASING_TEXT = "a strictly increasing list of numbers"
RANGE_TEXT = "a range {start, stop, num} (numpy.linspace)"
SCALED_RANGE_TEXT = ('a range {start, stop, num, scale = "linear" | "log"} (numpy.linspace '
                     "or numpy.geomspace)")
# A scan of more points than this is a typing slip (each point is a run), not a plan.
MAX_RANGE_NUM = 100_000


def list_or_range(key: str, value: Any, *, minimum: float | None = None,
                  strict: bool = False, integers: bool = False) -> list:
    """The values of a scan: a non-empty list of numbers, or a table ``{start, stop,
    num}`` meaning ``numpy.linspace(start, stop, num)`` (both ends included; num >= 1).

    Args:
        key: the dotted key, named in errors (``key[i]``, ``key.start``, ...).
        value: the list or the table.
        minimum: every value must be >= it (``strict``: >).
        strict: exclusive ``minimum``.
        integers: values must be integers (counts such as token numbers); a range then
            must give integers at every point.

    Returns:
        The values as a list of floats (ints with ``integers``).
    """
    if isinstance(value, dict):
        for name in value:
            if name not in RANGE_KEYS:
                raise ConfigError(f"{key}.{name} is not a key of a range; "
                                  f"{suggest(name, RANGE_KEYS)}", f"{key}.{name}")
        for name in RANGE_KEYS:
            if name not in value:
                raise ConfigError(f"{key}.{name} is missing: a range is a table "
                                  "{start, stop, num} (numpy.linspace)", f"{key}.{name}")
        start = finite_number(f"{key}.start", value["start"])
        stop = finite_number(f"{key}.stop", value["stop"])
        num = integer(f"{key}.num", value["num"], minimum=1, maximum=MAX_RANGE_NUM)
        values = [float(v) for v in np.linspace(start, stop, num)]
        if integers:
            if any(v != round(v) for v in values):
                raise ConfigError(f"{key} = {describe(value)} must give integers at every point "
                                  "(choose start, stop and num accordingly, or give a list)",
                                  key)
            values = [round(v) for v in values]
        # linspace is monotonic: its ends bound every value
        _bounded(f"{key}.start", values[0], minimum, strict)
        _bounded(f"{key}.stop", values[-1], minimum, strict)
        return values
    if not isinstance(value, (list, tuple)) or not value:
        raise ConfigError(f"{key} = {describe(value)} must be a non-empty list of numbers or a range "
                          "{start, stop, num}", key)
    check = ((lambda k, v: integer(k, v)) if integers else finite_number)
    values = [check(f"{key}[{i}]", v) for i, v in enumerate(value)]
    for i, v in enumerate(values):
        _bounded(f"{key}[{i}]", v, minimum, strict)
    return values


def increasing_within(key: str, value: Any, *, minimum: float, maximum: float,
                      integers: bool = False, strict: bool = False) -> list:
    """``list_or_range`` (a non-empty list or a range) that is also strictly increasing
    and at most ``maximum``: the refusal names the entry that breaks it."""
    values = list_or_range(key, value, minimum=minimum, strict=strict, integers=integers)
    for i, v in enumerate(values):
        if v > maximum:
            raise ConfigError(f"{key}[{i}] = {v!r}: values must be <= {maximum:g}",
                              f"{key}[{i}]")
        if i and v <= values[i - 1]:
            raise ConfigError(f"{key} = {describe(value)} must be strictly increasing "
                              f"(entry {i}: {v!r} after {values[i - 1]!r})", key)
    return values


def _bounded(key: str, x: float, minimum: float | None, strict: bool) -> None:
    if minimum is not None and (x <= minimum if strict else x < minimum):
        raise ConfigError(f"{key} = {x!r} must be {'>' if strict else '>='} {minimum:g}", key)


def plain(value: Any) -> Any:
    """``value`` with numpy arrays as (nested) lists and numpy scalars as Python scalars,
    through dicts, lists and tuples: a config written in Python may hold
    ``np.array([100, 1000])`` where a TOML file holds ``[100, 1000]``, and is then
    checked the same way.

    Raises:
        ConfigError: nesting deeper than Python's recursion limit.
    """
    try:
        return _plain(value)
    except RecursionError:
        raise ConfigError("the config is nested deeper than it can be read") from None


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())  # (an object array may hold tables)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


# What the checkers above accept, in words (the config reference): from the same constants.
for _check, _text in (
        (number, "a number (int or float)"),
        (finite_number, "a finite number"),
        (beta, f"a finite number >= 0 and <= {shown_number(MAX_BETA)}"),
        (kappa, 'a number > 0, or "inf" (no noise)'),
        (auto_or_positive, '"auto" or a finite number > 0'),
        (auto_or_count, '"auto" or an integer >= 2'),
        (boolean, "true or false"),
        (threads, '"auto" or an integer >= 1'),
        (path, "a file path (a non-empty string)")):
    accepting(_text, _check)
