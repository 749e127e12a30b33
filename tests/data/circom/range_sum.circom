pragma circom 2.0.0;

include "circomlib/circuits/bitify.circom";
include "circomlib/circuits/comparators.circom";

// Several public inputs and outputs, circomlib gadgets (bit decompositions,
// a comparator) and signals that occur only in C: exercises the densities
// of the A and B queries and the ordering of public signals.
//   outputs: lt = (a < b), s = a + b + secret, bits = popcount(secret)
template RangeSum(n) {
    signal input a;
    signal input b;
    signal input secret;
    signal output lt;
    signal output s;
    signal output bits;

    component cmp = LessThan(n);
    cmp.in[0] <== a;
    cmp.in[1] <== b;
    lt <== cmp.out;

    component nb = Num2Bits(n);
    nb.in <== secret;
    var acc = 0;
    for (var i = 0; i < n; i++) {
        acc += nb.out[i];
    }
    bits <== acc;

    signal sq;
    sq <== secret * secret;
    s <== a + b + secret + sq * 0;
}

component main {public [a, b]} = RangeSum(16);
