"""The groups G1 and G2 of BLS12-381: reference group law.

G1: y^2 = x^3 + 4 over Fq.  G2: y^2 = x^3 + 4(u + 1) over Fq2.
Both have a = 0, so one set of formulas serves both, written once against a
small field descriptor (:class:`FqOps` or :class:`Fq2Ops`).

An affine point is a tuple ``(x, y)``; the point at infinity is ``None``.
A Jacobian point is ``(X, Y, Z)`` meaning ``(X / Z^2, Y / Z^3)``; Z = 0 is
infinity. G1 coordinates are ints, G2 coordinates :class:`Fq2`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cuzk.algebra.fields import Fq2, Q, R, fq_inv

Affine = tuple[Any, Any] | None
Jacobian = tuple[Any, Any, Any]


class FqOps:
    """Field operations on Fq elements held as ints."""

    zero = 0
    one = 1

    @staticmethod
    def add(a: int, b: int) -> int:
        return (a + b) % Q

    @staticmethod
    def sub(a: int, b: int) -> int:
        return (a - b) % Q

    @staticmethod
    def mul(a: int, b: int) -> int:
        return a * b % Q

    @staticmethod
    def neg(a: int) -> int:
        return -a % Q

    @staticmethod
    def inv(a: int) -> int:
        return fq_inv(a)

    @staticmethod
    def is_zero(a: int) -> bool:
        return a == 0

    @staticmethod
    def small(k: int) -> int:
        return k % Q


class Fq2Ops:
    """Field operations on :class:`Fq2` elements."""

    zero = Fq2.zero()
    one = Fq2.one()

    @staticmethod
    def add(a: Fq2, b: Fq2) -> Fq2:
        return a + b

    @staticmethod
    def sub(a: Fq2, b: Fq2) -> Fq2:
        return a - b

    @staticmethod
    def mul(a: Fq2, b: Fq2) -> Fq2:
        return a * b

    @staticmethod
    def neg(a: Fq2) -> Fq2:
        return -a

    @staticmethod
    def inv(a: Fq2) -> Fq2:
        return a.inverse()

    @staticmethod
    def is_zero(a: Fq2) -> bool:
        return a.is_zero()

    @staticmethod
    def small(k: int) -> Fq2:
        return Fq2(k % Q, 0)


@dataclass(frozen=True)
class Curve:
    """A short Weierstrass curve y^2 = x^3 + b with its group law."""

    name: str
    F: Any  # FqOps or Fq2Ops
    b: Any
    generator: tuple[Any, Any]

    # --- predicates -----------------------------------------------------
    def is_on_curve(self, p: Affine) -> bool:
        if p is None:
            return True
        F = self.F
        x, y = p
        return F.mul(y, y) == F.add(F.mul(F.mul(x, x), x), self.b)

    def is_in_subgroup(self, p: Affine) -> bool:
        """p has order dividing r (reference: multiply by r)."""
        return self.mul_unreduced(p, R) is None

    # --- affine ---------------------------------------------------------
    def neg(self, p: Affine) -> Affine:
        if p is None:
            return None
        return (p[0], self.F.neg(p[1]))

    def add(self, p: Affine, q: Affine) -> Affine:
        if p is None:
            return q
        if q is None:
            return p
        F = self.F
        x1, y1 = p
        x2, y2 = q
        if x1 == x2:
            if y1 == y2 and not F.is_zero(y1):
                return self.double(p)
            return None
        lam = F.mul(F.sub(y2, y1), F.inv(F.sub(x2, x1)))
        x3 = F.sub(F.sub(F.mul(lam, lam), x1), x2)
        y3 = F.sub(F.mul(lam, F.sub(x1, x3)), y1)
        return (x3, y3)

    def double(self, p: Affine) -> Affine:
        if p is None:
            return None
        F = self.F
        x, y = p
        if F.is_zero(y):
            return None
        lam = F.mul(F.mul(F.small(3), F.mul(x, x)), F.inv(F.add(y, y)))
        x3 = F.sub(F.mul(lam, lam), F.add(x, x))
        y3 = F.sub(F.mul(lam, F.sub(x, x3)), y)
        return (x3, y3)

    # --- Jacobian -------------------------------------------------------
    def to_jacobian(self, p: Affine) -> Jacobian:
        F = self.F
        if p is None:
            return (F.one, F.one, F.zero)
        return (p[0], p[1], F.one)

    def to_affine(self, p: Jacobian) -> Affine:
        F = self.F
        X, Y, Z = p
        if F.is_zero(Z):
            return None
        zi = F.inv(Z)
        zi2 = F.mul(zi, zi)
        return (F.mul(X, zi2), F.mul(Y, F.mul(zi2, zi)))

    def jacobian_double(self, p: Jacobian) -> Jacobian:
        """dbl-2009-l (a = 0)."""
        F = self.F
        X, Y, Z = p
        if F.is_zero(Z) or F.is_zero(Y):
            return (F.one, F.one, F.zero)
        A = F.mul(X, X)
        B = F.mul(Y, Y)
        C = F.mul(B, B)
        t = F.add(X, B)
        D = F.sub(F.sub(F.mul(t, t), A), C)
        D = F.add(D, D)
        E = F.add(F.add(A, A), A)
        Fsq = F.mul(E, E)
        X3 = F.sub(Fsq, F.add(D, D))
        C8 = F.mul(F.small(8), C)
        Y3 = F.sub(F.mul(E, F.sub(D, X3)), C8)
        YZ = F.mul(Y, Z)
        Z3 = F.add(YZ, YZ)
        return (X3, Y3, Z3)

    def jacobian_add(self, p: Jacobian, q: Jacobian) -> Jacobian:
        """add-2007-bl, with the doubling and inverse cases handled."""
        F = self.F
        X1, Y1, Z1 = p
        X2, Y2, Z2 = q
        if F.is_zero(Z1):
            return q
        if F.is_zero(Z2):
            return p
        Z1Z1 = F.mul(Z1, Z1)
        Z2Z2 = F.mul(Z2, Z2)
        U1 = F.mul(X1, Z2Z2)
        U2 = F.mul(X2, Z1Z1)
        S1 = F.mul(F.mul(Y1, Z2), Z2Z2)
        S2 = F.mul(F.mul(Y2, Z1), Z1Z1)
        H = F.sub(U2, U1)
        rr = F.sub(S2, S1)
        if F.is_zero(H):
            if F.is_zero(rr):
                return self.jacobian_double(p)
            return (F.one, F.one, F.zero)
        H2 = F.add(H, H)
        I = F.mul(H2, H2)
        J = F.mul(H, I)
        rr = F.add(rr, rr)
        V = F.mul(U1, I)
        X3 = F.sub(F.sub(F.mul(rr, rr), J), F.add(V, V))
        S1J = F.mul(S1, J)
        Y3 = F.sub(F.mul(rr, F.sub(V, X3)), F.add(S1J, S1J))
        Zs = F.add(Z1, Z2)
        Z3 = F.mul(F.sub(F.sub(F.mul(Zs, Zs), Z1Z1), Z2Z2), H)
        return (X3, Y3, Z3)

    def mul_unreduced(self, p: Affine, k: int) -> Affine:
        """k·p for any non-negative k (not reduced mod r: used by the subgroup check)."""
        acc = self.to_jacobian(None)
        base = self.to_jacobian(p)
        for bit in bin(k)[2:] if k > 0 else "":
            acc = self.jacobian_double(acc)
            if bit == "1":
                acc = self.jacobian_add(acc, base)
        return self.to_affine(acc)

    def mul(self, p: Affine, k: int) -> Affine:
        """k·p for a scalar k (reduced mod r; p must be in the subgroup)."""
        return self.mul_unreduced(p, k % R)

    def sum(self, points: list[Affine]) -> Affine:
        acc = self.to_jacobian(None)
        for p in points:
            acc = self.jacobian_add(acc, self.to_jacobian(p))
        return self.to_affine(acc)

    def msm(self, points: list[Affine], scalars: list[int]) -> Affine:
        """Σ k_i·P_i, the naive way: the oracle for every faster MSM."""
        acc = self.to_jacobian(None)
        for p, k in zip(points, scalars, strict=True):
            acc = self.jacobian_add(acc, self.to_jacobian(self.mul(p, k)))
        return self.to_affine(acc)


G1 = Curve(
    name="G1",
    F=FqOps,
    b=4,
    generator=(
        0x17F1D3A73197D7942695638C4FA9AC0FC3688C4F9774B905A14E3A3F171BAC586C55E83FF97A1AEFFB3AF00ADB22C6BB,
        0x08B3F481E3AAA0F1A09E30ED741D8AE4FCF5E095D5D00AF600DB18CB2C04B3EDD03CC744A2888AE40CAA232946C5E7E1,
    ),
)

G2 = Curve(
    name="G2",
    F=Fq2Ops,
    b=Fq2(4, 4),
    generator=(
        Fq2(
            0x024AA2B2F08F0A91260805272DC51051C6E47AD4FA403B02B4510B647AE3D1770BAC0326A805BBEFD48056C8C121BDB8,
            0x13E02B6052719F607DACD3A088274F65596BD0D09920B61AB5DA61BBDC7F5049334CF11213945D57E5AC7D055D042B7E,
        ),
        Fq2(
            0x0CE5D527727D6E118CC9CDC6DA2E351AADFD9BAA8CBDD3A76D429A695160D12C923AC9CC3BACA289E193548608B82801,
            0x0606C4A02EA734CC32ACD2B02BC28B99CB3E287E85A763AF267492AB572E99AB3F370D275CEC1DA1AAA9075FF05F79BE,
        ),
    ),
)
