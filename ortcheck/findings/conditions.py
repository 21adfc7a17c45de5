"""Conditions on the machine or stack under which a manifest finding holds (its ``when`` table).

A finding that only some machines show (a library's kernel picked by a CPU flag, a defect of one
version) is still strict where it holds and must not turn a correct run red where it doesn't, the
way PyTorch's OpInfo decorators carry ``active_if``. Each key is one predicate over
:class:`ortcheck.machine.Machine`; every key of a ``when`` table must hold::

    when = { cpu_flags = ["avx512_bf16"], versions = { bitsandbytes = "==0.50.2" } }

``profiles`` names the hypothesis profiles a finding shows under: one only the ``nightly`` profile's
deeper draws reach (an OpInfo sample past the first three) is inactive, not a pass, at ``ci`` depth.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from ortcheck.machine import Machine


def _names(key: str, value) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError(f"{key} must be a non-empty list of names")
    return tuple(value)


def _specifiers(key: str, value) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict) or not value:
        raise ValueError(f"{key} must be a table of distribution = \"<PEP 440 specifier>\"")
    for distribution, spec in value.items():
        try:
            SpecifierSet(spec)
        except (InvalidSpecifier, TypeError):
            raise ValueError(f"{key}.{distribution}: {spec!r} is not a version specifier such as \"==0.50.2\"") from None
    return tuple(sorted(value.items()))


@dataclasses.dataclass(frozen=True)
class Predicate:
    parse: Callable[[str, object], tuple]
    holds: Callable[[Machine, tuple], bool]
    describe: Callable[[tuple], str]


PREDICATES: dict[str, Predicate] = {
    "cpu_flags": Predicate(_names, lambda m, flags: set(flags) <= m.cpu_flags,
                           lambda flags: "CPU flags " + ", ".join(flags)),
    "cpu_flags_absent": Predicate(_names, lambda m, flags: not set(flags) & m.cpu_flags,
                                  lambda flags: "no CPU flag " + ", ".join(flags)),
    "cpu_capability": Predicate(_names, lambda m, levels: m.cpu_capability in levels,
                                lambda levels: "torch CPU capability " + " or ".join(levels)),
    "device": Predicate(_names, lambda m, devices: m.device in devices,
                        lambda devices: "device " + " or ".join(devices)),
    "profiles": Predicate(_names, lambda m, names: m.profile in names,
                          lambda names: "hypothesis profile " + " or ".join(names)),
    "versions": Predicate(_specifiers,
                          lambda m, specs: all(m.version(d) is not None and SpecifierSet(s).contains(m.version(d))
                                               for d, s in specs),
                          lambda specs: ", ".join(f"{d}{s}" for d, s in specs)),
}


@dataclasses.dataclass(frozen=True)
class Condition:
    terms: tuple[tuple[str, tuple], ...]

    @classmethod
    def parse(cls, table) -> "Condition":
        """``table`` as read from TOML; ``ValueError`` naming the key for anything malformed."""
        if not isinstance(table, dict) or not table:
            raise ValueError(f"when must be a non-empty table of conditions: {sorted(PREDICATES)}")
        unknown = sorted(set(table) - set(PREDICATES))
        if unknown:
            raise ValueError(f"when: unknown condition {unknown}; conditions are {sorted(PREDICATES)}")
        return cls(tuple((key, PREDICATES[key].parse(key, value)) for key, value in sorted(table.items())))

    def holds(self, machine: Machine) -> bool:
        return all(PREDICATES[key].holds(machine, value) for key, value in self.terms)

    def __str__(self) -> str:
        return "; ".join(PREDICATES[key].describe(value) for key, value in self.terms)
