"""BLS12-381 reference algebra: fields, groups, encodings, domains, pairings."""
