"""The CUDA backend's memory model: what each part of a key and of a proof takes
on a GPU and in pinned host memory, from counts alone.

Pure arithmetic over the same formulas the backend reserves by (nothing is
built and CuPy is not imported), so a planner can place a 32GiB circuit on
any GPU size without its 30 GiB of matrices. :mod:`cuzk.engine.keystore.residency`
decides from these figures what stays resident and what streams.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuzk.backends.base import proof_working_bytes
from cuzk.backends.cuda.csr_bytes import pinned_bytes, resident_bytes, streamed_bytes, upload_bytes
from cuzk.backends.cuda.msm import (
    G1_SPEC,
    G2_SPEC,
    LOAD_CHUNK_BYTES,
    load_staging_bytes,
    streamed_msm_bytes,
    workspace_bytes,
)
from cuzk.backends.cuda.msm.plan import Tuning

# The chunk a lean partition's MSMs are sized for at the least (points of
# G1; half as many of G2): their room is two chunks staged and one chunk's
# workspace at one window a group, below which the affine method does not
# fit and an MSM falls back to the slow XYZZ walk.
LEAN_CHUNK = 1 << 22
SLACK = 64 << 20  # CuPy's rounding of many arrays, small tables


def _distinct_for(nnz: int, distinct: int) -> int:
    """The dictionary a matrix is reserved with: coded matrices at the 32-bit
    width with a 2^16-value allowance (the engine's sampled estimate does the same)."""
    if distinct * 32 < nnz * 28:
        return max(distinct, (1 << 16) + 1)
    return distinct


@dataclass(frozen=True)
class CudaMemoryModel:
    """Byte counts of the CUDA backend's data (see the module docstring)."""

    name: str = "cuda"

    # --- a key's parts --------------------------------------------------
    @staticmethod
    def base_bytes(query: str, points: int) -> int:
        """A query's bases as the MSM keeps them (affine Montgomery words)."""
        return points * (G2_SPEC.affine_bytes if query == "b_g2" else G1_SPEC.affine_bytes)

    @staticmethod
    def matrix_bytes(rows: int, nnz: int, distinct: int) -> int:
        """A matrix resident on the device (codes into a dictionary where it pays)."""
        return resident_bytes(rows, nnz, _distinct_for(nnz, distinct))

    @staticmethod
    def matrix_pinned_bytes(rows: int, nnz: int, distinct: int) -> int:
        """A streamed matrix in pinned host memory."""
        return pinned_bytes(rows, nnz, _distinct_for(nnz, distinct))

    @staticmethod
    def matrix_streaming_bytes(rows: int, nnz: int, distinct: int) -> int:
        """What a product over a streamed matrix holds on the device besides the
        witness and its output (the dictionary and two blocks in flight)."""
        return streamed_bytes(rows, nnz, _distinct_for(nnz, distinct))

    @staticmethod
    def index_bytes(a_points: int, b_points: int) -> int:
        """The a and b queries' selections of the assignment (int32)."""
        return 4 * (a_points + b_points)

    @staticmethod
    def key_load_bytes(rows: int, nnz: tuple[int, ...], points: int = 1 << 62) -> int:
        """Device bytes a key's load holds only while it runs: the bases' staging
        (a chunk of at most ``points``, the largest query's) and the temporaries
        of converting the largest matrix."""
        staging = load_staging_bytes(min(LOAD_CHUNK_BYTES, G2_SPEC.affine_bytes * max(1, points)))
        return staging + max((upload_bytes(rows, z) for z in nnz), default=0)

    # --- a partition ----------------------------------------------------
    @staticmethod
    def prove_host_bytes(num_constraints: int, num_variables: int) -> int:
        """Host bytes one proof of this shape holds (assignment included).

        Everything domain-sized lives in VRAM; the host keeps the assignment
        (32 bytes a variable) and, one MSM at a time, the gathered scalars of
        the a or b query (at most one more copy), plus staging slack.
        """
        return 2 * 32 * num_variables + (64 << 20)

    @staticmethod
    def domain(num_constraints: int) -> int:
        return 1 << max(0, (num_constraints - 1).bit_length())

    @staticmethod
    def partition_bytes(num_constraints: int, num_variables: int, fork_share: int | None) -> int:
        """Device bytes one whole proof of this shape takes beyond its key: the largest
        of its steps (in 32-byte vectors: m of the domain, n of the assignment).

        ``fork_share`` is the side branch's share (``CudaBackend.fork``; None: the
        default, :meth:`side_workspace_bytes`; 0: no side branch, the L, A and
        B MSMs after H's). With a side branch the prover's own line and the
        branch run together. While H is computed: the assignment, A·w, B·w,
        C·w and H's four buffers, 7m + n; the side's gathered a and b scalars,
        2n, and its share. While H's MSM runs: the assignment, h, the gathered
        scalars, 3n + m, H's workspace and the side's share. After it the side
        alone, with the workspace of the largest of L, A, B in G1 and B in G2.
        Without a side branch the gathers come after H's MSM. Each MSM's
        workspace at the engine's default tuning, which it only ever lowers
        (:func:`cuzk.backends.cuda.msm.workspace_bytes`). Never less than
        :func:`cuzk.backends.base.proof_working_bytes`.
        """
        m = 1 << max(0, (num_constraints - 1).bit_length())
        n = max(1, num_variables)
        side = CudaMemoryModel.side_workspace_bytes(m, n) if fork_share is None else fork_share
        slack = 64 << 20
        rest = max(workspace_bytes(G1_SPEC, n, False), workspace_bytes(G2_SPEC, n, False))
        working = proof_working_bytes(num_constraints, num_variables)
        if side == 0:
            h_step = 32 * (7 * m + n) + slack
            msm_h_step = 32 * (n + m) + workspace_bytes(G1_SPEC, m, False) + slack
            side_step = 32 * 3 * n + rest + slack
            return max(working, h_step, msm_h_step, side_step)
        h_step = 32 * (7 * m + 3 * n) + side + slack
        msm_h_step = 32 * (3 * n + m) + workspace_bytes(G1_SPEC, m, False) + side + slack
        side_step = 32 * (3 * n + m) + rest + slack
        return max(working, h_step, msm_h_step, side_step)

    @staticmethod
    def side_workspace_bytes(domain_size: int, num_variables: int) -> int:
        """What a proof's side branch (``CudaBackend.fork``) sizes its MSMs to
        while the prover's own line still works: two vectors of the larger of
        the domain and the assignment (:meth:`partition_bytes` keeps them). At
        32GiB PoRep's size, 8 GiB: the L MSM of its witness (46 % ones, 3 %
        full scalars) takes 4.6 at the default tuning, B in G2 8.5 (two window
        groups fit)."""
        return 64 * max(1, domain_size, num_variables)

    @staticmethod
    def default_fork_share(num_constraints: int, num_variables: int) -> int:
        m = CudaMemoryModel.domain(num_constraints)
        return CudaMemoryModel.side_workspace_bytes(m, num_variables)

    @staticmethod
    def lean_partition_bytes(
        num_constraints: int,
        num_variables: int,
        max_query: int,
        streamed_matrix: int = 0,
        msm_room: int | None = None,
        gathered: int | None = None,
        fork: bool = False,
    ) -> int:
        """A partition proved lean: the H step within two domain vectors (the
        evaluations made one at a time and transformed in place), then the MSMs
        in chunks within ``msm_room``; the assignment (n values) stays
        throughout. ``max_query``: the most scalars one query gathers from
        the assignment (its a or b selection); ``streamed_matrix``: the device
        bytes of a product over a streamed matrix (0 when all are resident);
        ``msm_room``: what the MSMs work in (None: a chunk of LEAN_CHUNK, or
        of the largest query when it is smaller, in G1 or G2); ``gathered``:
        the bytes of a query's scalars gathered whole beside its MSM (a or b
        bases resident; streamed ones gather a chunk at a time inside their
        pass; None: 32 bytes a scalar of ``max_query``, the bound of any).

        ``fork``: the L, A and B MSMs run on a branch beside H's MSM
        (:meth:`lean_fork_share`), their room and H's together ``msm_room``;
        while both run the partition holds the assignment, h, both rooms and
        a whole gather. Else H's MSM (h and the room), then the others in
        turn (a whole gather and the room)."""
        m = CudaMemoryModel.domain(num_constraints)
        n = max(1, num_variables)
        if msm_room is None:
            msm_room = CudaMemoryModel.lean_msm_room(num_constraints, max_query)
        if gathered is None:
            gathered = 32 * max_query
        h_step = 64 * m + streamed_matrix
        msm_h = 32 * m + msm_room + (gathered if fork else 0)
        side = gathered + msm_room
        return 32 * n + max(h_step, msm_h, side) + SLACK

    @staticmethod
    def lean_fork_share(num_constraints: int, max_query: int, msm_room: int) -> int:
        """The part of a lean partition's MSM room its side branch (L, A and B
        beside H's MSM) works in: a third of the room, at least the least
        room of a pass (:meth:`lean_msm_room`), in whole MiB; 0 (no branch)
        where H's pass would then have less than that least room. H's MSM is
        bound by its arithmetic and takes the larger part (its window groups
        grow with it); L, A and B are bound by their bases' copy (≈ 2 GiB of
        a 6 GiB room at a 16 GiB budget, docs/device-notes/tiers.md)."""
        least = CudaMemoryModel.lean_msm_room(num_constraints, max_query)
        share = -(-max(least, msm_room // 3) // (1 << 20)) << 20
        return share if msm_room - share >= least else 0

    @staticmethod
    def lean_msm_room(num_constraints: int, max_query: int) -> int:
        """The room a lean partition's MSMs work in: a chunk of LEAN_CHUNK G1
        points (half as many in G2), or of the largest query when smaller,
        staged twice, with one chunk's workspace at one window a group."""
        m = CudaMemoryModel.domain(num_constraints)
        points = min(LEAN_CHUNK, max(m, max_query))
        return max(
            CudaMemoryModel.msm_room_bytes(points, "G1"),
            CudaMemoryModel.msm_room_bytes(max(1, points // 2), "G2"),
        )

    @staticmethod
    def lean_free_room(num_constraints: int, max_query: int, streamed_matrix: int = 0) -> int:
        """The most room a lean partition's MSMs can have without growing its
        working set: its H step's two domain vectors (and a streamed product)
        less the largest vector an MSM keeps beside its room (h, or a query's
        gathered scalars). What the plan gives them at least
        (:func:`cuzk.engine.keystore.residency.plan`)."""
        m = CudaMemoryModel.domain(num_constraints)
        return 64 * m + streamed_matrix - 32 * max(m, max_query)

    @staticmethod
    def msm_room_bytes(points: int, group: str = "G1") -> int:
        """The room of an MSM over chunks of ``points`` bases: a pass of one
        scalar set at one window a group (:func:`~cuzk.backends.cuda.msm.streamed_msm_bytes`)."""
        spec = G2_SPEC if group == "G2" else G1_SPEC
        return streamed_msm_bytes(spec, points, 1, Tuning(group_windows=1))


MODEL = CudaMemoryModel()
