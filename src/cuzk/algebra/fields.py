"""Reference arithmetic for the fields of BLS12-381.

Fr (the scalar field, modulus ``R``) and Fq (the base field, modulus ``Q``)
elements are plain Python ints in ``[0, modulus)``. Fq2 = Fq[u] / (u^2 + 1)
is the small class :class:`Fq2`. Everything here is the readable reference
that vectorised and GPU code is checked against; none of it is fast.
"""

from __future__ import annotations

from dataclasses import dataclass

# Scalar field: r = 0x73ed...0001, 255 bits, 2-adicity 32.
R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
# Base field: q, 381 bits, q = 3 (mod 4).
Q = 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB  # noqa: E501

FR_BITS = 255
FQ_BYTES = 48

# Fr's multiplicative group: r - 1 = 2^32 * t with t odd; 7 generates it.
FR_TWO_ADICITY = 32
FR_GENERATOR = 7
FR_ODD_PART = (R - 1) >> FR_TWO_ADICITY
# A primitive 2^32-th root of unity: 7^t.
FR_ROOT_OF_UNITY = pow(FR_GENERATOR, FR_ODD_PART, R)


def fr(x: int) -> int:
    """Reduce an integer into Fr."""
    return x % R


def fr_inv(x: int) -> int:
    """Inverse in Fr; raises ZeroDivisionError for 0."""
    if x % R == 0:
        raise ZeroDivisionError("0 has no inverse in Fr")
    return pow(x, -1, R)


def fq_inv(x: int) -> int:
    """Inverse in Fq; raises ZeroDivisionError for 0."""
    if x % Q == 0:
        raise ZeroDivisionError("0 has no inverse in Fq")
    return pow(x, -1, Q)


def fq_sqrt(x: int) -> int | None:
    """A square root in Fq, or None when x is not a square (q = 3 mod 4)."""
    x %= Q
    y = pow(x, (Q + 1) // 4, Q)
    return y if y * y % Q == x else None


def fq_is_lexicographically_largest(y: int) -> bool:
    """The zcash sign convention: y is the larger of {y, -y}."""
    return y > (Q - 1) // 2


def fr_batch_inverse(xs: list[int]) -> list[int]:
    """Montgomery's trick: n inverses for one inversion and 3(n-1) products.

    Zeros map to zero (they have no inverse; callers that care check first).
    """
    prefix = []
    acc = 1
    for x in xs:
        prefix.append(acc)
        if x:
            acc = acc * x % R
    inv = pow(acc, -1, R)
    out = [0] * len(xs)
    for i in range(len(xs) - 1, -1, -1):
        x = xs[i]
        if x:
            out[i] = inv * prefix[i] % R
            inv = inv * x % R
    return out


@dataclass(frozen=True, slots=True)
class Fq2:
    """c0 + c1·u with u^2 = -1."""

    c0: int
    c1: int

    @staticmethod
    def zero() -> Fq2:
        return Fq2(0, 0)

    @staticmethod
    def one() -> Fq2:
        return Fq2(1, 0)

    def is_zero(self) -> bool:
        return self.c0 == 0 and self.c1 == 0

    def __add__(self, o: Fq2) -> Fq2:
        return Fq2((self.c0 + o.c0) % Q, (self.c1 + o.c1) % Q)

    def __sub__(self, o: Fq2) -> Fq2:
        return Fq2((self.c0 - o.c0) % Q, (self.c1 - o.c1) % Q)

    def __neg__(self) -> Fq2:
        return Fq2(-self.c0 % Q, -self.c1 % Q)

    def __mul__(self, o: Fq2 | int) -> Fq2:
        if isinstance(o, int):
            return Fq2(self.c0 * o % Q, self.c1 * o % Q)
        # Karatsuba: (a0 + a1 u)(b0 + b1 u) = a0 b0 - a1 b1 + ((a0 + a1)(b0 + b1) - a0 b0 - a1 b1) u
        t0 = self.c0 * o.c0
        t1 = self.c1 * o.c1
        return Fq2((t0 - t1) % Q, ((self.c0 + self.c1) * (o.c0 + o.c1) - t0 - t1) % Q)

    __rmul__ = __mul__

    def square(self) -> Fq2:
        return self * self

    def norm(self) -> int:
        """c0^2 + c1^2, the Fq norm (the product with the conjugate)."""
        return (self.c0 * self.c0 + self.c1 * self.c1) % Q

    def inverse(self) -> Fq2:
        n = self.norm()
        if n == 0:
            raise ZeroDivisionError("0 has no inverse in Fq2")
        ni = pow(n, -1, Q)
        return Fq2(self.c0 * ni % Q, -self.c1 * ni % Q)

    def __pow__(self, e: int) -> Fq2:
        result = Fq2.one()
        base = self
        while e:
            if e & 1:
                result = result * base
            base = base * base
            e >>= 1
        return result

    def sqrt(self) -> Fq2 | None:
        """A square root, or None when there is none.

        Uses the norm: if x = a + b u has a root c + d u, then
        c^2 = (a + sqrt(a^2 + b^2)) / 2 for one choice of the inner root.
        """
        if self.is_zero():
            return Fq2.zero()
        a, b = self.c0, self.c1
        if b == 0:
            r = fq_sqrt(a)
            if r is not None:
                return Fq2(r, 0)
            # a is a non-square in Fq, so -a is a square: sqrt(a) = sqrt(-a)·u.
            r = fq_sqrt(-a % Q)
            return Fq2(0, r) if r is not None else None
        n = fq_sqrt(self.norm())
        if n is None:
            return None
        half = pow(2, -1, Q)
        for s in (n, -n % Q):
            c2 = (a + s) * half % Q
            c = fq_sqrt(c2)
            if c is None or c == 0:
                continue
            d = b * pow(2 * c, -1, Q) % Q
            cand = Fq2(c, d)
            if cand * cand == self:
                return cand
        return None

    def is_lexicographically_largest(self) -> bool:
        """zcash's rule for Fq2: compare c1 first, c0 when c1 is zero."""
        if self.c1:
            return fq_is_lexicographically_largest(self.c1)
        return fq_is_lexicographically_largest(self.c0)
