"""Hashes outside circuits: SHA-256 (with Filecoin's 254-bit truncation),
Poseidon (neptune's constants and schedule) and Merkle trees, on plain data
and vectorised over many inputs (numpy, or CuPy through an array module).

This layer sits on ``cuzk.algebra`` only; gadgets and circuits build on it.
"""
