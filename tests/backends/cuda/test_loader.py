"""Kernel source hashing and prebuilt-binary lookup (no GPU needed)."""

from __future__ import annotations

import hashlib

from cuzk.backends.cuda import loader


def test_source_hash_covers_headers():
    # ntt.cu includes ntt.cuh, fr.cuh and fr_chain.cuh; hpoly.cu includes ntt.cuh.
    assert loader.source_hash("ntt.cu") != loader.source_hash("hpoly.cu")
    assert loader.source_hash("ntt.cu") == loader.source_hash("ntt.cu")
    seen: set = set()
    loader._expand_hash(loader.KERNEL_DIR / "ntt.cu", seen, hashlib.sha256())
    assert {p.name for p in seen} == {"ntt.cu", "ntt.cuh", "fr.cuh", "fr_chain.cuh"}


def test_module_key_depends_on_options_and_arch():
    k = loader.module_key("fr_ops.cu", (), "90")
    assert k != loader.module_key("fr_ops.cu", ("-DFR_MUL_VARIANT=1",), "90")
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


def test_default_multiplication_variant_matches_header():
    from cuzk.backends.cuda.fr import DEFAULT_VARIANT

    text = (loader.KERNEL_DIR / "fr.cuh").read_text()
    assert f"#define FR_MUL_VARIANT {DEFAULT_VARIANT}\n" in text


def test_ntt_default_variant_matches_kernel():
    from cuzk.backends.cuda.ntt import NTT_DEFAULT_VARIANT, V6_OPTIONS

    text = (loader.KERNEL_DIR / "ntt.cu").read_text()
    assert f"#define FR_MUL_VARIANT {NTT_DEFAULT_VARIANT}\n" in text
    assert V6_OPTIONS == loader._NTT_V6


def benchmark_builds() -> list[tuple[str, tuple[str, ...]]]:
    """Every (kernel file, compiler options) ``cuzk-bench kernels`` loads: the
    Fr multiply variants of its ceilings, its NTT builds, the v6 H polynomial,
    the sparse kernel's builds (cuzk.bench.fr_ntt)."""
    from cuzk.backends.cuda.fr import DEFAULT_VARIANT
    from cuzk.backends.cuda.ntt import V6_OPTIONS
    from cuzk.bench.fr_ntt import NTT_BUILDS, SEG_BUILDS

    others = sorted({0, 1, 2, 3} - {DEFAULT_VARIANT})
    fr = [("fr_ops.cu", ())] + [("fr_ops.cu", (f"-DFR_MUL_VARIANT={v}",)) for v in others]
    ntt = [("ntt.cu", ())] + [
        ("ntt.cu", (() if variant is None else (f"-DFR_MUL_VARIANT={variant}",)) + options)
        for _, variant, options in NTT_BUILDS
    ]
    spmv = [("spmv.cu", ())] + [("spmv.cu", (o,)) for o in SEG_BUILDS]
    return [*fr, *ntt, ("hpoly.cu", ()), ("hpoly.cu", V6_OPTIONS), *spmv]


def test_prebuild_set_covers_the_benchmark():
    builds = benchmark_builds()
    assert len(builds) == len(set(builds)) >= 10
    missing = set(builds) - set(loader.PREBUILD_DEFAULT)
    assert not missing, f"add to loader.PREBUILD_DEFAULT: {sorted(missing)}"
