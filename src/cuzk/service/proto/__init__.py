"""cuzk.v1 protocol: proving.proto and its generated modules."""
