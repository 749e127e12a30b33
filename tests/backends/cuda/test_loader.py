"""Kernel source hashing and prebuilt-binary lookup (no GPU needed)."""

from __future__ import annotations

import hashlib

from cuzk.backends.cuda import kernels, loader


def test_source_hash_covers_headers():
    # ntt.cu includes ntt.cuh, fr.cuh and fr_chain.cuh; hpoly.cu includes ntt.cuh.
    assert loader.source_hash("ntt.cu") != loader.source_hash("hpoly.cu")
    assert loader.source_hash("ntt.cu") == loader.source_hash("ntt.cu")
    seen: set = set()
    loader._expand_hash(loader.KERNEL_DIR / "ntt.cu", seen, hashlib.sha256())
    assert {p.name for p in seen} == {"ntt.cu", "ntt.cuh", "fr.cuh", "fr_chain.cuh"}


def test_module_key_depends_on_options_and_arch():
    k = loader.module_key("fr_ops.cu", (), "90")
    assert k != loader.module_key("fr_ops.cu", ("-DFR_MUL_FOLDED=0",), "90")
    assert k != loader.module_key("fr_ops.cu", (), "89")
    assert k == loader.module_key("fr_ops.cu", (), "90")


def test_prebuilt_lookup(tmp_path, monkeypatch):
    monkeypatch.setenv("CUZK_KERNEL_PREBUILT", str(tmp_path))
    assert loader.prebuilt_path("spmv.cu", (), "90") is None
    key = loader.module_key("spmv.cu", (), "90")
    (tmp_path / f"spmv-{key}.cubin").write_bytes(b"\0")
    assert loader.prebuilt_path("spmv.cu", (), "90") == tmp_path / f"spmv-{key}.cubin"
    monkeypatch.delenv("CUZK_KERNEL_PREBUILT")
    assert loader.prebuilt_path("spmv.cu", (), "90") is None


def test_only_the_ntt_multiplies_without_folding():
    """fr.cuh's multiplication is the folded one; ntt.cu alone picks the other
    (docs/device-notes/ntt.md, "v7")."""
    assert "#define FR_MUL_FOLDED 1\n" in (loader.KERNEL_DIR / "fr.cuh").read_text()
    assert "#define FR_MUL_FOLDED 0\n" in (loader.KERNEL_DIR / "ntt.cu").read_text()
    others = [p for p in loader.KERNEL_DIR.iterdir() if p.name != "ntt.cu"]
    assert not any("#define FR_MUL_FOLDED 0" in p.read_text() for p in others)


def benchmark_builds() -> list[tuple[str, tuple[str, ...]]]:
    """Every (kernel file, compiler options) ``cuzk-bench kernels`` loads: the
    Fr kernels of its ceilings, its NTT builds, the H polynomial, the sparse
    kernel's builds (cuzk.bench.fr_ntt)."""
    from cuzk.bench.fr_ntt import NTT_BUILDS, SEG_BUILDS

    ntt = [("ntt.cu", ())] + [("ntt.cu", options) for _, options in NTT_BUILDS]
    spmv = [("spmv.cu", ())] + [("spmv.cu", (o,)) for o in SEG_BUILDS]
    return [("fr_ops.cu", ()), *ntt, ("hpoly.cu", ()), *spmv]


def test_prebuild_set_covers_the_benchmark():
    builds = benchmark_builds()
    assert len(builds) == len(set(builds)) >= 8
    missing = set(builds) - set(kernels.PREBUILD_DEFAULT)
    assert not missing, f"add to kernels.PREBUILD_DEFAULT: {sorted(missing)}"
