"""Names the dead-code check (vulture, run by ``make test``) cannot see used.

Each is used by a framework or read without its name being written: keep an
entry only while the thing it names exists.
"""

# ruff: noqa: F821, B018  (bare names, read by vulture only)

# Context managers' __exit__(self, *exc), and stand-ins that take a real API's
# parameters without using them.
exc
fraction
blocking
allocator

# gRPC calls an interceptor's intercept_service and the servicer's methods
# (service/server.py's ProvingService) by the names in proving.proto.
intercept_service
Prove
GetMetrics

# Dataclass fields read through asdict or setattr, or kept as the record of a
# file's header.
verify_ms  # engine.jobs.Timings, set by setattr(f"{stage}_ms")
published_params_digest  # engine.kinds.base.KeyFiles
host_needed_bytes  # engine.memplan.Plan, shown through asdict
n_prv_inputs  # formats.snarkjs: the .r1cs header
mds_inv  # hashers.poseidon_constants: the MDS matrix's inverse
seg_hold  # backends.cuda.spmv: keeps a device buffer alive

# Registered with the command-line parser by its dotted name (cli/bench.py).
register_service  # cli.cmd_demo

# A fixture a test asks for only for its effect (the shared circuit cache).
module_circuit_cache
