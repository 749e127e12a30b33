"""Circuit gadgets with bellperson's exact constraint and variable layout.

``boolean``, ``num``, ``uint32``, ``multipack``, ``sha256`` (bellperson),
``poseidon`` (neptune's circuit), ``insertion`` and ``merkle``
(rust-fil-proofs' PoR). Gadgets compute witness values through
:mod:`~cuzk.gadgets.values`, so the same code synthesizes one instance with
cuzk's ``ConstraintSystem`` or many at once (vectorised), and repeated
pieces are declared as :mod:`~cuzk.gadgets.subcircuit` for compile-once.
"""
