pragma circom 2.0.0;

// The smallest useful Groth16 circuit: one public input, one output, and a
// private value. y = (x + k)^3 + x·k.
template CubeMix() {
    signal input x;
    signal input k;
    signal output y;
    signal t;
    signal sq;
    signal xk;
    t <== x + k;
    sq <== t * t;
    xk <== x * k;
    y <== sq * t + xk;
}

component main {public [x]} = CubeMix();
