"""GPU setup: the same key as the CPU setup, bit for bit, for the same toxic waste."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.algebra import pairing
from cuzk.algebra.arrays import fr_from_array
from cuzk.algebra.curves import G1, G2
from cuzk.circuits.demo import DemoCircuit
from cuzk.groth16 import setup
from cuzk.groth16.keys import ProvingKey
from cuzk.groth16.setup import DevParams
from cuzk.groth16.setup_gpu import GpuPoints, setup_gpu
from cuzk.r1cs import ConstraintSystem


def demo_r1cs(rounds: int = 30, words: int = 2):
    cs = ConstraintSystem(witness=False)
    DemoCircuit(rounds=rounds, words=words).synthesize(cs, None, None)
    return cs.r1cs()


def assert_same_key(a: ProvingKey, b: ProvingKey) -> None:
    assert a.vk == b.vk
    for name in ("h", "l", "a", "b_g1", "b_g2"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.shape == y.shape, name
        assert np.array_equal(x, y), name


class ArkEngine:
    """The fixed-base interface of MsmEngine, on the CPU through arkworks."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def fixed_base_g1(self, point, scalars: np.ndarray, to_host: bool = True) -> np.ndarray:
        self.calls.append(("G1", len(scalars)))
        fb = pairing.FixedBase(pairing.g1_to_ark(point))
        raw = fb.mul_many_xy_le(fr_from_array(scalars))
        return np.frombuffer(raw, dtype="<u8").reshape(-1, 2, 6).copy()

    def fixed_base_g2(self, point, scalars: np.ndarray, to_host: bool = True) -> np.ndarray:
        self.calls.append(("G2", len(scalars)))
        fb = pairing.FixedBase(pairing.g2_to_ark(point))
        raw = fb.mul_many_xy_le(fr_from_array(scalars))
        return np.frombuffer(raw, dtype="<u8").reshape(-1, 2, 2, 6).copy()


def test_setup_gpu_assembles_the_cpu_key():
    """With CPU point generation behind the engine interface, the key is setup()'s."""
    r1cs = demo_r1cs()
    engine = ArkEngine()
    made = DevParams(r1cs, seed=3, points=GpuPoints(engine, xp=np)).proving_key()
    assert_same_key(made, setup.setup(r1cs, seed=3))
    # Every query went through the engine: ic, h, l, a, b (G1) and b (G2).
    assert [g for g, _ in engine.calls].count("G1") == 5
    assert [g for g, _ in engine.calls].count("G2") == 1


@pytest.mark.gpu
def test_setup_gpu_is_bit_identical_and_writes_params(tmp_path):
    from cuzk.formats import bellperson

    r1cs = demo_r1cs(rounds=200, words=3)
    cpu = setup.setup(r1cs, seed=11)
    gpu = setup_gpu(r1cs, seed=11)
    assert_same_key(gpu, cpu)
    assert all(G1.is_on_curve(p) for p in gpu.vk.ic)
    assert G2.is_on_curve(gpu.vk.delta_g2)
    path = tmp_path / "demo.params"
    bellperson.write_params(path, gpu)
    back = bellperson.open_params(path).proving_key()
    assert_same_key(back, cpu)
