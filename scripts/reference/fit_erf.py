"""fit_erf.py — the coefficients of gl_erff (model/vexp.h), refitted from scratch.

What it does: a rational Remez exchange, in 40-digit mpmath arithmetic, for the
minimax *absolute* error of erf(x) ~ x*P(x^2)/Q(x^2) on [0, C] with P and Q of
degree 5 and Q(0) = 1 (an odd form, so erf(-x) = -erf(x) holds exactly in
float too).  It prints the equioscillation level E and the coefficients, to 20
digits and as the float literals vexp.h uses.  With the defaults (5 5 4.05) E is
2.5e-8; vexp.h clamps at |x| = 4 (inside the fit), where the float evaluation
gives exactly 1.

What it does not: it does not measure the float evaluation (its rounding,
at most about 6 ulp of a result near 1, is most of gl_erff's 3.8e-7 worst error);
tests/test_grad.c does that against libm's erf over every float.

Usage: python3 scripts/reference/fit_erf.py [M K C]      (needs mpmath only: apt-get install python3-mpmath)
"""
import struct
import sys

from mpmath import cos, erf, fabs, lu_solve, matrix, mp, mpf, nstr, pi

mp.dps = 40


def rational(coef, m, x):
    """x*P(x^2)/Q(x^2) and Q(x^2) for coef = [p0..pm, q1..qk]."""
    s = x * x
    p = mpf(0)
    for a in reversed(coef[:m + 1]):
        p = p * s + a
    q = mpf(0)
    for b in reversed(coef[m + 1:]):
        q = q * s + b
    q = q * s + 1
    return x * p / q, q


def fit(m, k, c):
    n = m + 1 + k          # unknown coefficients
    npts = n + 1           # reference points (coefficients and the level E)
    ref = [c * (1 - cos(pi * i / (npts - 1))) / 2 for i in range(npts)]
    ref[0] = c * mpf("1e-3")
    grid = [c * (1 - cos(pi * i / 6000)) / 2 for i in range(1, 6001)]
    E = mpf(0)
    for _ in range(40):
        # solve x_i P(s_i) - erf(x_i) Q(s_i) = (-1)^i E Q(s_i), linearised in E by the previous Q
        qold = [mpf(1)] * npts
        for _ in range(30):
            A, b = matrix(npts, npts), matrix(npts, 1)
            for i, x in enumerate(ref):
                s, fx = x * x, erf(x)
                for j in range(m + 1):
                    A[i, j] = x * s**j
                for j in range(k):
                    A[i, m + 1 + j] = -fx * s**(j + 1)
                A[i, npts - 1] = -(-1)**i * qold[i]
                b[i] = fx
            sol = lu_solve(A, b)
            coef = [sol[j] for j in range(n)]
            qold = [rational(coef, m, x)[1] for x in ref]
            done = fabs(sol[npts - 1] - E) < fabs(sol[npts - 1]) * mpf("1e-12")
            E = sol[npts - 1]
            if done:
                break
        err = [rational(coef, m, x)[0] - erf(x) for x in grid]
        # the new reference: the local extrema of the error, one per run of equal sign
        alt = []
        for i, e in enumerate(err):
            if i > 0 and fabs(e) < fabs(err[i - 1]) or i + 1 < len(err) and fabs(e) < fabs(err[i + 1]):
                continue
            if alt and (err[alt[-1]] > 0) == (e > 0):
                if fabs(e) > fabs(err[alt[-1]]):
                    alt[-1] = i
            else:
                alt.append(i)
        while len(alt) > npts:
            alt.pop(0 if fabs(err[alt[0]]) < fabs(err[alt[-1]]) else -1)
        worst = max(fabs(e) for e in err)
        if len(alt) < npts:
            sys.exit("fit_erf: only %d alternating extrema for %d reference points" % (len(alt), npts))
        ref = [grid[i] for i in alt]
        if worst < fabs(E) * mpf("1.001"):
            break
    return coef, E, worst


def main():
    m, k, c = (int(sys.argv[1]), int(sys.argv[2]), mpf(sys.argv[3])) if len(sys.argv) == 4 else (5, 5, mpf("4.05"))
    coef, E, worst = fit(m, k, c)
    print("erf(x) ~ x*P(x^2)/Q(x^2), P degree %d, Q degree %d, on [0, %s]: E = %.4e, max error on the grid %.4e"
          % (m, k, nstr(c, 6), float(E), float(worst)))
    names = ["p%d" % j for j in range(m + 1)] + ["q%d" % (j + 1) for j in range(k)]
    for name, v in zip(names, coef):
        f = struct.unpack("f", struct.pack("f", float(v)))[0]
        print("%-3s = %-26s float %.9ef" % (name, nstr(v, 20), f))


if __name__ == "__main__":
    main()
