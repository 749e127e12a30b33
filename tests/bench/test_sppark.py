"""The sppark comparison wrapper (cuzk.bench.sppark): its ctypes plumbing and
Montgomery conversion, through a stand-in library with the same C ABI whose
"MSM" returns the first point (the MSM of the one scalar 1)."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from cuzk.algebra.arrays import g1_to_array, g2_to_array
from cuzk.algebra.curves import G1, G2
from cuzk.bench.sppark import SpparkError, SpparkMsm
from cuzk.formats.points import g1_to_lem, g2_to_lem

STAND_IN = r"""
#include <stdint.h>
#include <string.h>
#include <stddef.h>
static int first(const void* p, size_t n, uint64_t* out, float* ms, int reps, int words) {
    if (n != 1) return 7;
    memcpy(out, p, words * 8);
    for (int i = 0; i < reps; i++) ms[i] = 1.5f + i;
    return 0;
}
int sppark_msm_g1(const void* p, const void* s, size_t n, uint64_t* out, float* ms, int reps) {
    return first(p, n, out, ms, reps, 12);
}
int sppark_msm_g2(const void* p, const void* s, size_t n, uint64_t* out, float* ms, int reps) {
    return first(p, n, out, ms, reps, 24);
}
"""


class _Device:
    """What the wrapper reads of a CuPy array: .data.ptr, .size, .shape."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a
        self.size, self.shape = a.size, a.shape
        self.data = type("mem", (), {"ptr": a.ctypes.data})()


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory):
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler for the stand-in library")
    d = tmp_path_factory.mktemp("sppark")
    (d / "s.c").write_text(STAND_IN)
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(d / "s.so"), str(d / "s.c")], check=True)
    return SpparkMsm(d / "s.so")


@pytest.mark.parametrize("group", ["G1", "G2"])
def test_point_comes_back_from_montgomery(stand_in, group):
    g = G1 if group == "G1" else G2
    p = g.mul(g.generator, 12345)
    std = (g1_to_array if group == "G1" else g2_to_array)([p])
    lem = (g1_to_lem if group == "G1" else g2_to_lem)(std)  # Montgomery, as on the device
    points = _Device(np.frombuffer(lem, dtype=np.uint32).copy())
    scalars = _Device(np.zeros((1, 4), dtype=np.uint64))
    ms, got = stand_in.msm(group, points, scalars, reps=3)
    assert ms == [1.5, 2.5, 3.5]
    assert got == p


def test_errors_are_named(stand_in, tmp_path):
    with pytest.raises(SpparkError, match="no such library"):
        SpparkMsm(tmp_path / "missing.so")
    two = _Device(np.zeros((2, 4), dtype=np.uint64))
    with pytest.raises(SpparkError, match="2 scalars"):  # fewer points than scalars
        stand_in.msm("G1", _Device(np.zeros(24, dtype=np.uint32)), two, reps=1)
    pts = _Device(np.zeros(48, dtype=np.uint32))
    with pytest.raises(SpparkError, match="returned 7"):
        stand_in.msm("G1", pts, two, reps=1)


def test_infinity_is_all_zero(stand_in):
    points = _Device(np.zeros(24, dtype=np.uint32))
    _, got = stand_in.msm("G1", points, _Device(np.zeros((1, 4), dtype=np.uint64)), reps=1)
    assert got is None
