"""Groth16 over BLS12-381: keys, development setup, prover, verifier, proof encoding."""
