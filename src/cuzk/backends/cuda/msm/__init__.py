"""Multi-scalar multiplication on the GPU: Σ sᵢ·Pᵢ over G1 and G2.

One module per concern (sppark's ``msm/`` is the model), every name
importable from here as before:

- :mod:`.spec`: the groups as the kernels see them (:class:`CurveSpec`);
- :mod:`.plan`: the cost model and window plan (:class:`Tuning`,
  :func:`choose_window`, :func:`group_windows`, :func:`workspace_bytes`,
  :func:`classify_bytes`, :func:`fit_tuning`, :func:`choose_sort`, and the
  whole plan of one MSM: :func:`plan_msm`, :class:`MsmPlan`);
- :mod:`.pipeline`: one MSM's kernels in order (:func:`msm_xyzz`) and its
  result as an affine point (:func:`xyzz_to_affine`);
- :mod:`.bases`: bases resident in VRAM or streamed from pinned host memory,
  one pass over the chunks serving several scalar sets, and loaded from a key
  file a chunk at a time (:class:`PreparedBases`, :func:`load_staging_bytes`,
  :func:`streamed_msm_bytes`, :data:`STREAM_CHUNK_BYTES`);
- :mod:`.fixed_base`: fixed-base products for parameter generation;
- :mod:`.engine`: :class:`MsmEngine`, which holds them together on one device.
"""

from cuzk.backends.cuda.msm.bases import (
    _LOAD_PROBLEMS,
    LOAD_CHUNK_BYTES,
    STREAM_CHUNK_BYTES,
    STREAM_CHUNK_MAX,
    PreparedBases,
    fit_chunk,
    load_staging_bytes,
    stream_chunk_max,
    streamed_msm_bytes,
)
from cuzk.backends.cuda.msm.engine import MsmEngine, _CupyKernels
from cuzk.backends.cuda.msm.fixed_base import (
    FIXED_BASE_WINDOW,
    fixed_base_affine,
    fixed_base_table,
    fixed_base_windows,
)
from cuzk.backends.cuda.msm.pipeline import NO_KEY, Kernels, msm_xyzz, xyzz_to_affine
from cuzk.backends.cuda.msm.plan import (
    MsmPlan,
    Tuning,
    choose_sort,
    choose_window,
    classify_bytes,
    fit_tuning,
    group_windows,
    num_windows,
    plan_msm,
    workspace_bytes,
)
from cuzk.backends.cuda.msm.spec import G1_SPEC, G2_SPEC, SCALAR_BITS, CurveSpec

__all__ = [
    "FIXED_BASE_WINDOW",
    "G1_SPEC",
    "G2_SPEC",
    "LOAD_CHUNK_BYTES",
    "NO_KEY",
    "SCALAR_BITS",
    "STREAM_CHUNK_BYTES",
    "STREAM_CHUNK_MAX",
    "_LOAD_PROBLEMS",
    "CurveSpec",
    "Kernels",
    "MsmEngine",
    "MsmPlan",
    "PreparedBases",
    "Tuning",
    "_CupyKernels",
    "choose_sort",
    "choose_window",
    "classify_bytes",
    "fit_chunk",
    "fit_tuning",
    "fixed_base_affine",
    "fixed_base_table",
    "fixed_base_windows",
    "group_windows",
    "load_staging_bytes",
    "msm_xyzz",
    "num_windows",
    "plan_msm",
    "stream_chunk_max",
    "streamed_msm_bytes",
    "workspace_bytes",
    "xyzz_to_affine",
]
