"""The backend contract is honest: every backend implements every method of
:class:`cuzk.backends.base.Backend`, with the protocol's parameters."""

from __future__ import annotations

import inspect

import pytest

from cuzk.backends.base import Backend
from cuzk.backends.cpu import CpuBackend
from cuzk.backends.cuda.backend import CudaBackend  # importable without CuPy


def protocol_methods() -> dict[str, object]:
    return {
        name: member
        for name, member in vars(Backend).items()
        if not name.startswith("_") and (callable(member) or isinstance(member, staticmethod))
    }


def _shape(fn) -> list[tuple]:
    """Names, kinds and defaults: what a caller relies on (annotations may narrow)."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def contract_problems(impl: type) -> list[str]:
    problems = []
    if not isinstance(getattr(impl, "name", None), str):
        problems.append("name")
    for name, want in protocol_methods().items():
        got = inspect.getattr_static(impl, name, None)
        if got is None:
            problems.append(f"{name}: missing")
        elif isinstance(got, staticmethod) != isinstance(want, staticmethod):
            problems.append(f"{name}: static in one, not the other")
        elif _shape(getattr(impl, name)) != _shape(getattr(Backend, name)):
            problems.append(f"{name}{inspect.signature(getattr(impl, name))}")
    return problems


def test_the_protocol_lists_the_contract() -> None:
    assert {
        "asarray",
        "spmv",
        "ntt",
        "h_poly",
        "h_odd_coset",
        "prepare_g1",
        "load_g1",
        "msm_g1",
        "msm_g2",
        "gather",
        "prove_host_bytes",
        "prove_device_bytes",
    } <= set(protocol_methods())


@pytest.mark.parametrize("impl", [CpuBackend, CudaBackend], ids=lambda c: c.__name__)
def test_every_backend_implements_every_method(impl) -> None:
    assert contract_problems(impl) == []


def test_a_missing_or_different_method_is_found() -> None:
    class Partial(CpuBackend):
        def msm_g1(self, bases, scalars):  # no phases
            raise NotImplementedError

    problems = contract_problems(type("Bare", (), {"name": "bare"}))
    assert "spmv: missing" in problems and "h_odd_coset: missing" in problems
    assert contract_problems(Partial) == ["msm_g1(self, bases, scalars)"]
