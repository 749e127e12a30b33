"""SnapDeals (EmptySectorUpdate): parameters, vanilla proofs, generator, circuit."""
