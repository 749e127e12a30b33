"""Fallback PoSt (WinningPoSt, WindowPoSt): config, vanilla proofs and their
bincode format, challenges, the vanilla verifier, a sparse proof generator,
and the circuit with its vectorised witness."""
