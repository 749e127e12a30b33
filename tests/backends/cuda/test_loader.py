"""Kernel source hashing and prebuilt-binary lookup (no GPU needed)."""

from __future__ import annotations

import hashlib

from cuzk.backends.cuda import loader


def test_source_hash_covers_headers():
    # ntt.cu includes ntt.cuh, fr.cuh and mont.cuh; hpoly.cu includes ntt.cuh.
    assert loader.source_hash("ntt.cu") != loader.source_hash("hpoly.cu")
    assert loader.source_hash("ntt.cu") == loader.source_hash("ntt.cu")
    seen: set = set()
    loader._expand_hash(loader.KERNEL_DIR / "ntt.cu", seen, hashlib.sha256())
    assert {p.name for p in seen} == {"ntt.cu", "ntt.cuh", "fr.cuh", "mont.cuh"}


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
    """Every file that includes fr.cuh picks its product; ntt.cu alone the
    unfolded one (docs/device-notes/ntt.md#tuning-table)."""
    assert "#error" in (loader.KERNEL_DIR / "fr.cuh").read_text()
    picks = {}
    for p in loader.KERNEL_DIR.glob("*.cu"):
        text = p.read_text()
        for value in ("0", "1"):
            if f"#define FR_MUL_FOLDED {value}" in text:
                picks[p.name] = value
    assert picks == {
        "ntt.cu": "0",
        "fr_ops.cu": "1",
        "spmv.cu": "1",
        "witness.cu": "1",
        "hpoly.cu": "1",
    }
