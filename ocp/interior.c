/* The interior-point terms of a lifted group's linearization (ocp/interior.py), compiled: the
 * same equations per stage, in one pass.
 *
 * Row-major stacks over S stages; y of size ny, the state's tangent of size nx, nw local
 * equalities. Inequalities g (S, ni), ni = ng + nb: ng rows with the Jacobian G (S, ng, ny), then
 * nb bound rows, row j being bsign[j] times column bcol[j] of y. Slacks s and duals z (S, ni).
 * The cost's gradient gy (S, ny) and Hessian H (S, ny, ny), the local equalities c (S, nw) with
 * their Jacobian C (S, nw, ny) and multipliers beta (S, nw), the state equation's residual
 * b (S, nx) and Jacobian A (S, nx, ny), the costates lam (S, nx) of the stage's state and
 * lam_next (S, nx) of its state equation.
 *
 *   r_p = g - s,  r_c = s z - eps,  grad = gy - G^T z (with the bound rows),
 *   H += G^T diag(z / s) G (the bound rows on the diagonal),  gc = grad + G^T ((r_c + z r_p) / s),
 *   st = grad + C^T beta + A^T lam_next,  st[:nx] -= lam,
 *   norms = (|st|^2 + |b|^2 + |c|^2 + |r_p|^2 + |r_c|^2,  max(|b|, |c|, -g, 0),  |b|_1 + |c|_1 + |r_p|_1).
 *
 * The products with G skip its zeros (a friction cone touches a few columns of y).
 */
#include <math.h>
#include <stdlib.h>

int liftoff_interior(int S, int ny, int nx, int nw, int ng, int nb, const int *bcol, const double *bsign,
                     const double *g, const double *G, const double *s, const double *z, double eps,
                     const double *gy, const double *c, const double *C, const double *beta, const double *b,
                     const double *A, const double *lam, const double *lam_next, double *H, double *r_p, double *r_c,
                     double *gc, double *st, double *norms) {
    const int ni = ng + nb;
    int *cols = malloc(sizeof(int) * (ny > 0 ? ny : 1));
    if (!cols) return -1;
    double squares = 0.0, violation = 0.0, l1 = 0.0;
    for (int k = 0; k < S; ++k) {
        const double *gk = g + (size_t)k * ni, *sk = s + (size_t)k * ni, *zk = z + (size_t)k * ni;
        const double *Gk = G + (size_t)k * ng * ny, *Ck = C + (size_t)k * nw * ny, *Ak = A + (size_t)k * nx * ny;
        const double *ck = c + (size_t)k * nw, *bk = b + (size_t)k * nx;
        double *rp = r_p + (size_t)k * ni, *rc = r_c + (size_t)k * ni, *Hk = H + (size_t)k * ny * ny;
        double *gck = gc + (size_t)k * ny, *stk = st + (size_t)k * ny;
        for (int j = 0; j < ny; ++j) stk[j] = gy[(size_t)k * ny + j], gck[j] = 0.0;
        for (int i = 0; i < ni; ++i) {
            rp[i] = gk[i] - sk[i];
            rc[i] = sk[i] * zk[i] - eps;
            squares += rp[i] * rp[i] + rc[i] * rc[i];
            l1 += fabs(rp[i]);
            if (-gk[i] > violation) violation = -gk[i];
            const double d = zk[i] / sk[i], w = (rc[i] + zk[i] * rp[i]) / sk[i];
            if (i >= ng) { /* a bound row: one column */
                const int j = bcol[i - ng];
                stk[j] -= bsign[i - ng] * zk[i];
                gck[j] += bsign[i - ng] * w;
                Hk[(size_t)j * ny + j] += d;
                continue;
            }
            const double *Gi = Gk + (size_t)i * ny;
            int n = 0;
            for (int j = 0; j < ny; ++j)
                if (Gi[j] != 0.0) cols[n++] = j;
            for (int a = 0; a < n; ++a) {
                const int ja = cols[a];
                stk[ja] -= Gi[ja] * zk[i];
                gck[ja] += Gi[ja] * w;
                const double da = Gi[ja] * d;
                for (int e = 0; e < n; ++e) Hk[(size_t)ja * ny + cols[e]] += da * Gi[cols[e]];
            }
        }
        for (int j = 0; j < ny; ++j) gck[j] += stk[j]; /* gc = grad + G^T w */
        for (int r = 0; r < nw; ++r) {
            const double m = beta[(size_t)k * nw + r];
            const double *Cr = Ck + (size_t)r * ny;
            for (int j = 0; j < ny; ++j) stk[j] += Cr[j] * m;
            squares += ck[r] * ck[r];
            l1 += fabs(ck[r]);
            if (fabs(ck[r]) > violation) violation = fabs(ck[r]);
        }
        for (int r = 0; r < nx; ++r) {
            const double m = lam_next[(size_t)k * nx + r];
            const double *Ar = Ak + (size_t)r * ny;
            for (int j = 0; j < ny; ++j) stk[j] += Ar[j] * m;
            stk[r] -= lam[(size_t)k * nx + r];
            squares += bk[r] * bk[r];
            l1 += fabs(bk[r]);
            if (fabs(bk[r]) > violation) violation = fabs(bk[r]);
        }
        for (int j = 0; j < ny; ++j) squares += stk[j] * stk[j];
    }
    free(cols);
    norms[0] = squares, norms[1] = violation, norms[2] = l1;
    return 0;
}
