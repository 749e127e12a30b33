pragma circom 2.0.0;

include "circomlib/circuits/sha256/sha256.circom";

// The benchmark circuit: circomlib's SHA-256 of a 512-bit message (two
// compression blocks with the padding), ~59k constraints, a 2^16 domain.
// The digest bits are the public outputs.
component main = Sha256(512);
