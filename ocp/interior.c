/* The interior-point terms of a lifted group's linearization, and the slack and dual directions
 * of its Newton step (ocp/interior.py), compiled: the same equations per stage, in one pass.
 *
 * Row-major stacks over S stages; y of size ny, the state's tangent of size nx, nw local
 * equalities. Inequalities g (S, ni), ni = ng + nb: ng rows with the Jacobian G (S, ng, ny), then
 * nb bound rows, row j being bsign[j] times column bcol[j] of y; G is zero outside its nc columns
 * cols (increasing; those its structure allows, or all of y). Slacks s and duals z (S, ni).
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
 * The products with G run over its columns cols and skip its zeros (a friction cone touches a few
 * columns of y). The sums run
 * in the reference's order (G^T z, G^T w and the barrier Hessian formed apart, then added) and
 * without fused multiply-adds, so that a solve at its roundoff floor takes the reference's steps.
 */
#include <math.h>
#include <stdlib.h>

#pragma GCC optimize("fp-contract=off")

int liftoff_interior(int S, int ny, int nx, int nw, int ng, int nb, const int *bcol, const double *bsign, int nc,
                     const int *cols, const double *g, const double *G, const double *s, const double *z, double eps,
                     const double *gy, const double *c, const double *C, const double *beta, const double *b,
                     const double *A, const double *lam, const double *lam_next, double *H, double *r_p, double *r_c,
                     double *gc, double *st, double *norms) {
    const int ni = ng + nb;
    /* work: G^T z and G^T w (then the bound rows'), the gram */
    double *work = malloc(sizeof(double) * (4 * ny + ny * ny + 1));
    if (!work) return -1;
    double *tz = work, *tw = tz + ny, *bz = tw + ny, *bd = bz + ny, *gram = bd + ny;
    double squares = 0.0, violation = 0.0, l1 = 0.0;
    for (int k = 0; k < S; ++k) {
        const double *gk = g + (size_t)k * ni, *sk = s + (size_t)k * ni, *zk = z + (size_t)k * ni;
        const double *Gk = G + (size_t)k * ng * ny, *Ck = C + (size_t)k * nw * ny, *Ak = A + (size_t)k * nx * ny;
        const double *ck = c + (size_t)k * nw, *bk = b + (size_t)k * nx, *gyk = gy + (size_t)k * ny;
        double *rp = r_p + (size_t)k * ni, *rc = r_c + (size_t)k * ni, *Hk = H + (size_t)k * ny * ny;
        double *gck = gc + (size_t)k * ny, *stk = st + (size_t)k * ny;
        for (int i = 0; i < ni; ++i) {
            rp[i] = gk[i] - sk[i];
            rc[i] = sk[i] * zk[i] - eps;
            squares += rp[i] * rp[i] + rc[i] * rc[i];
            l1 += fabs(rp[i]);
            if (-gk[i] > violation) violation = -gk[i];
        }
        /* the gram of the cone rows on their columns, G^T z and G^T w, summed row after row */
        const int *used = cols, nu = ng ? nc : 0;
        for (int j = 0; j < ny; ++j) tz[j] = tw[j] = bz[j] = bd[j] = 0.0;
        for (int a = 0; a < nu; ++a)
            for (int e = 0; e < nu; ++e) gram[(size_t)used[a] * ny + used[e]] = 0.0;
        for (int i = 0; i < ng; ++i) {
            const double *Gi = Gk + (size_t)i * ny, d = zk[i] / sk[i], w = (rc[i] + zk[i] * rp[i]) / sk[i];
            for (int a = 0; a < nu; ++a) {
                const int ja = used[a];
                if (Gi[ja] == 0.0) continue;
                tz[ja] += Gi[ja] * zk[i];
                tw[ja] += Gi[ja] * w;
                const double da = Gi[ja] * d;
                for (int e = 0; e < nu; ++e) gram[(size_t)ja * ny + used[e]] += da * Gi[used[e]];
            }
        }
        for (int a = 0; a < nu; ++a)
            for (int e = 0; e < nu; ++e) Hk[(size_t)used[a] * ny + used[e]] += gram[(size_t)used[a] * ny + used[e]];
        /* the bound rows: one column each */
        double *bw = gram; /* their (r_c + z r_p) / s, summed per column (the gram is added) */
        for (int j = 0; j < ny; ++j) bw[j] = 0.0;
        for (int i = ng; i < ni; ++i) {
            const int j = bcol[i - ng];
            const double sign = bsign[i - ng];
            bz[j] += sign * zk[i];
            bw[j] += sign * ((rc[i] + zk[i] * rp[i]) / sk[i]);
            bd[j] += zk[i] / sk[i];
        }
        /* grad = gy - G^T z, gc = grad + G^T w, st = grad + C^T beta + A^T lam_next - (lam, 0) */
        for (int j = 0; j < ny; ++j) {
            Hk[(size_t)j * ny + j] += bd[j];
            stk[j] = gyk[j] - (tz[j] + bz[j]);
            gck[j] = stk[j] + (tw[j] + bw[j]);
            tz[j] = tw[j] = 0.0; /* C^T beta and A^T lam_next */
        }
        for (int r = 0; r < nw; ++r) {
            const double m = beta[(size_t)k * nw + r], *Cr = Ck + (size_t)r * ny;
            for (int j = 0; j < ny; ++j) tz[j] += Cr[j] * m;
            squares += ck[r] * ck[r];
            l1 += fabs(ck[r]);
            if (fabs(ck[r]) > violation) violation = fabs(ck[r]);
        }
        for (int r = 0; r < nx; ++r) {
            const double m = lam_next[(size_t)k * nx + r], *Ar = Ak + (size_t)r * ny;
            for (int j = 0; j < ny; ++j) tw[j] += Ar[j] * m;
            squares += bk[r] * bk[r];
            l1 += fabs(bk[r]);
            if (fabs(bk[r]) > violation) violation = fabs(bk[r]);
        }
        for (int j = 0; j < ny; ++j) {
            stk[j] = stk[j] + tz[j] + tw[j];
            if (j < nx) stk[j] -= lam[(size_t)k * nx + j];
            squares += stk[j] * stk[j];
        }
    }
    free(work);
    norms[0] = squares, norms[1] = violation, norms[2] = l1;
    return 0;
}

/* The slack and dual directions of a Newton step and its fraction-to-boundary step sizes
 * (ocp/pdipm.py), the primal direction dy given in two parts: its first nz columns (the state's
 * tangent and the controls, dxu (S, nz)) and the rest (dw (S, ny - nz)).
 *
 *   ds = G dy + r_p (row j of the bounds: bsign[j] dy[bcol[j]]),  dz = -(r_c + z ds) / s,
 *   steps = (min(1, min over ds_i < 0 of -tau s_i / ds_i),  the same of z and dz).
 */
void liftoff_interior_expand(int S, int ny, int nz, int ng, int nb, const int *bcol, const double *bsign, int nc,
                             const int *cols, const double *G, const double *dxu, const double *dw, const double *s,
                             const double *z, const double *r_p, const double *r_c, double tau, double *ds,
                             double *dz, double *steps) {
    const int ni = ng + nb, nw = ny - nz;
    double primal = INFINITY, dual = INFINITY;
    for (int k = 0; k < S; ++k) {
        const double *Gk = G + (size_t)k * ng * ny, *xk = dxu + (size_t)k * nz, *wk = dw + (size_t)k * nw;
        const double *sk = s + (size_t)k * ni, *zk = z + (size_t)k * ni;
        const double *rp = r_p + (size_t)k * ni, *rc = r_c + (size_t)k * ni;
        double *dsk = ds + (size_t)k * ni, *dzk = dz + (size_t)k * ni;
        for (int i = 0; i < ng; ++i) dsk[i] = 0.0;
        for (int c = 0; c < nc; ++c) { /* the rows' sums side by side, each in the order of its columns */
            const int j = cols[c];
            const double y = j < nz ? xk[j] : wk[j - nz];
            for (int i = 0; i < ng; ++i) dsk[i] += Gk[(size_t)i * ny + j] * y;
        }
        for (int i = ng; i < ni; ++i) {
            const int j = bcol[i - ng];
            dsk[i] = bsign[i - ng] * (j < nz ? xk[j] : wk[j - nz]);
        }
        for (int i = 0; i < ni; ++i) {
            dsk[i] += rp[i];
            dzk[i] = -(rc[i] + zk[i] * dsk[i]) / sk[i];
            if (dsk[i] < 0.0) {
                const double a = -tau * sk[i] / dsk[i];
                if (a < primal) primal = a;
            }
            if (dzk[i] < 0.0) {
                const double a = -tau * zk[i] / dzk[i];
                if (a < dual) dual = a;
            }
        }
    }
    steps[0] = primal < 1.0 ? primal : 1.0;
    steps[1] = dual < 1.0 ? dual : 1.0;
}
