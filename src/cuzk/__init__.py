"""cuzk: a persistent GPU proving service for Filecoin Groth16 proofs."""

__version__ = "0.1.0"
