/* The condensing and expansion of ocp/condensing.py, compiled: the same equations per stage.
 *
 * Row-major stacks over S stages; y = (z, w) with z = (dx, du) of size nz = nx + nu and w of
 * size nw; ny = nz + nw. Inputs: H (S, ny, ny), g (S, ny), C (S, nw, ny), c (S, nw),
 * A (S, nx, ny), b (S, nx), and the rows or columns of H_zw, H_ww and A_w that are not zero
 * (the products skip the others, and the rows of ww that are zero at a stage): zw (columns of
 * H_zw), ww (rows and columns of H_ww), ar, ac (rows and columns of A_w).
 * condense: Cw = C[:, :, nz:] = P^T L U (partial pivoting), [T t] = -Cw^-1 [C_z c],
 *   Q = H_zz + H_zw T + (H_zw T)^T + T^T H_ww T (symmetrized), l = g_z + H_zw t + T^T (g_w + H_ww t),
 *   [Ac Bc] = A_z + A_w T, bc = b + A_w t, written into stage index[s] of the LQR of ocp/lqr.py
 *   (Ac (., nx, nx), Bc (., nx, nm), bc, Q as Qxx (., nx, nx), Qxu (., nx, nm), Quu (., nm, nm),
 *   l as lx, lu (., nm); a stage's nu <= nm controls are the leading columns).
 *   Returns 0, or s + 1 if Cw is singular at stage s.
 * expand: dw = T z + t, beta = -Cw^-T (H_wy y + g_w + A_w^T lam) with y = (z, dw).
 *
 * T^T H_ww T is a product of scipy's BLAS (dgemm, whose address liftoff_set_blas receives once
 * from Python; Fortran calling convention, column-major: the row-major C = A B is the
 * column-major C^T = B^T A^T). The LU factorization and solves of Cw stay loops that skip the
 * zeros of Cw: at nw = 24 to 30 they are faster than LAPACK's dgetrf and dgetrs.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef void gemm_t(const char *, const char *, const int *, const int *, const int *, const double *,
                    const double *, const int *, const double *, const int *, const double *, double *, const int *);

static gemm_t *dgemm;

/* The routine dgemm. */
void liftoff_set_blas(void **routines) { dgemm = (gemm_t *)routines[0]; }

/* C = op(A) op(B) + beta C, row-major; op(A) (m, l), op(B) (l, n); op(X) = X^T when t is 'T'. */
static void gemm(char ta, char tb, int m, int n, int l, const double *A, int lda, const double *B, int ldb,
                 double beta, double *C, int ldc) {
    const double alpha = 1.0;
    dgemm(&tb, &ta, &n, &m, &l, &alpha, B, &ldb, A, &lda, &beta, C, &ldc);
}

/* In-place LU of the n x n matrix M with row pivots; 0 if singular. */
static int lu_factor(int n, double *M, int *piv) {
    for (int k = 0; k < n; ++k) {
        int p = k;
        double best = fabs(M[k * n + k]);
        for (int i = k + 1; i < n; ++i)
            if (fabs(M[i * n + k]) > best) best = fabs(M[i * n + k]), p = i;
        piv[k] = p;
        if (!(best > 0.0)) return 0;
        if (p != k)
            for (int j = 0; j < n; ++j) {
                const double tmp = M[k * n + j];
                M[k * n + j] = M[p * n + j];
                M[p * n + j] = tmp;
            }
        const double d = M[k * n + k];
        for (int i = k + 1; i < n; ++i) {
            const double f = (M[i * n + k] /= d);
            if (f != 0.0)
                for (int j = k + 1; j < n; ++j) M[i * n + j] -= f * M[k * n + j];
        }
    }
    return 1;
}

/* X <- M^-1 X for X (n, m) with M = P^T L U from lu_factor(). */
static void lu_solve(int n, int m, const double *M, const int *piv, double *X) {
    for (int k = 0; k < n; ++k)
        if (piv[k] != k)
            for (int j = 0; j < m; ++j) {
                const double tmp = X[k * m + j];
                X[k * m + j] = X[piv[k] * m + j];
                X[piv[k] * m + j] = tmp;
            }
    for (int i = 1; i < n; ++i)
        for (int r = 0; r < i; ++r) {
            const double f = M[i * n + r];
            if (f != 0.0)
                for (int j = 0; j < m; ++j) X[i * m + j] -= f * X[r * m + j];
        }
    for (int i = n - 1; i >= 0; --i) {
        for (int r = i + 1; r < n; ++r) {
            const double f = M[i * n + r];
            if (f != 0.0)
                for (int j = 0; j < m; ++j) X[i * m + j] -= f * X[r * m + j];
        }
        const double d = M[i * n + i];
        for (int j = 0; j < m; ++j) X[i * m + j] /= d;
    }
}

/* x <- M^-T x for M = P^T L U from lu_factor(). */
static void lu_solve_transposed(int n, const double *M, const int *piv, double *x) {
    for (int i = 0; i < n; ++i) {
        double s = x[i];
        for (int r = 0; r < i; ++r) s -= M[r * n + i] * x[r];
        x[i] = s / M[i * n + i];
    }
    for (int i = n - 1; i >= 0; --i) {
        double s = x[i];
        for (int r = i + 1; r < n; ++r) s -= M[r * n + i] * x[r];
        x[i] = s;
    }
    for (int k = n - 1; k >= 0; --k)
        if (piv[k] != k) {
            const double tmp = x[k];
            x[k] = x[piv[k]];
            x[piv[k]] = tmp;
        }
}

int liftoff_condense(int S, int nx, int nu, int nw, const double *H, const double *g, const double *C, const double *c,
                     const double *A, const double *b, int nzw, const int *zw, int nww, const int *ww, int nar,
                     const int *ar, int nac, const int *ac, double *LU, int *piv, double *T, double *t,
                     const int *index, int nm, double *Ac, double *Bc, double *bc, double *Qxx, double *Qxu,
                     double *Quu, double *lx, double *lu) {
    const int nz = nx + nu, ny = nz + nw, m = nz + 1;
    double *X = malloc(sizeof(double) * (nw * m + 2 * nw * nz + nw + nw * nw + nz * nz + nz));
    int *rows = malloc(sizeof(int) * (nww > 0 ? nww : 1));
    if (!X || !rows) {
        free(X);
        free(rows);
        return -1;
    }
    double *HT = X + nw * m, *gw = HT + nw * nz, *Tw = gw + nw, *Hw = Tw + nw * nz, *Qs = Hw + nw * nw;
    double *ls = Qs + nz * nz;
    for (int s = 0; s < S; ++s) {
        const double *Hs = H + (size_t)s * ny * ny, *gs = g + (size_t)s * ny, *Cs = C + (size_t)s * nw * ny;
        const double *As = A + (size_t)s * nx * ny;
        double *M = LU + (size_t)s * nw * nw, *Ts = T + (size_t)s * nw * nz, *ts = t + (size_t)s * nw;
        int *ps = piv + (size_t)s * nw;
        const size_t k = (size_t)index[s];
        for (int i = 0; i < nw; ++i) {
            memcpy(M + i * nw, Cs + i * ny + nz, sizeof(double) * nw);
            memcpy(X + i * m, Cs + i * ny, sizeof(double) * nz);
            X[i * m + nz] = c[(size_t)s * nw + i];
        }
        if (!lu_factor(nw, M, ps)) {
            free(X);
            free(rows);
            return s + 1;
        }
        lu_solve(nw, m, M, ps, X);
        for (int i = 0; i < nw; ++i) {
            for (int j = 0; j < nz; ++j) Ts[i * nz + j] = -X[i * m + j];
            ts[i] = -X[i * m + nz];
        }
        /* Q = H_zz + H_zw T + (H_zw T)^T + T^T H_ww T; l = g_z + H_zw t + T^T (g_w + H_ww t) */
        for (int i = 0; i < nz; ++i) {
            memcpy(Qs + i * nz, Hs + i * ny, sizeof(double) * nz);
            ls[i] = gs[i];
        }
        for (int i = 0; i < nw; ++i) gw[i] = gs[nz + i];
        for (int i = 0; i < nz; ++i)
            for (int a = 0; a < nzw; ++a) {
                const double h = Hs[i * ny + nz + zw[a]];
                if (h == 0.0) continue;
                const double *Tr = Ts + zw[a] * nz;
                for (int j = 0; j < nz; ++j) {
                    Qs[i * nz + j] += h * Tr[j];
                    Qs[j * nz + i] += h * Tr[j];
                }
                ls[i] += h * ts[zw[a]];
            }
        /* the rows of ww whose entries of H_ww are not all zero at this stage (H_ww is symmetric:
           their columns too), e.g. the accelerations' where their cost weighs nothing */
        int na = 0;
        for (int a = 0; a < nww; ++a) {
            const double *h = Hs + (nz + ww[a]) * ny + nz;
            int used = 0;
            for (int e = 0; e < nww && !used; ++e) used = h[ww[e]] != 0.0;
            if (used) rows[na++] = ww[a];
        }
        if (na > 0) { /* Tw = T[rows], Hw = H_ww[rows, rows]: Q += Tw^T (Hw Tw), g_w[rows] += Hw t[rows] */
            for (int a = 0; a < na; ++a) {
                memcpy(Tw + a * nz, Ts + rows[a] * nz, sizeof(double) * nz);
                for (int e = 0; e < na; ++e) {
                    const double h = Hs[(nz + rows[a]) * ny + nz + rows[e]];
                    Hw[a * na + e] = h;
                    gw[rows[a]] += h * ts[rows[e]];
                }
            }
            gemm('N', 'N', na, nz, na, Hw, na, Tw, nz, 0.0, HT, nz);
            gemm('T', 'N', nz, nz, na, Tw, nz, HT, nz, 1.0, Qs, nz);
        }
        for (int a = 0; a < nw; ++a) {
            const double f = gw[a];
            if (f == 0.0) continue;
            const double *Ta = Ts + a * nz;
            for (int i = 0; i < nz; ++i) ls[i] += Ta[i] * f;
        }
        for (int i = 0; i < nz; ++i)
            for (int j = i + 1; j < nz; ++j) {
                const double v = 0.5 * (Qs[i * nz + j] + Qs[j * nz + i]);
                Qs[i * nz + j] = v;
                Qs[j * nz + i] = v;
            }
        for (int i = 0; i < nx; ++i) {
            memcpy(Qxx + k * nx * nx + i * nx, Qs + i * nz, sizeof(double) * nx);
            memcpy(Qxu + k * nx * nm + i * nm, Qs + i * nz + nx, sizeof(double) * nu);
        }
        for (int i = 0; i < nu; ++i) memcpy(Quu + k * nm * nm + i * nm, Qs + (nx + i) * nz + nx, sizeof(double) * nu);
        memcpy(lx + k * nx, ls, sizeof(double) * nx);
        memcpy(lu + k * nm, ls + nx, sizeof(double) * nu);
        /* [Ac Bc] = A_z + A_w T, bc = b + A_w t */
        double *Acs = Ac + k * nx * nx, *Bcs = Bc + k * nx * nm, *bcs = bc + k * nx;
        for (int i = 0; i < nx; ++i) {
            memcpy(Acs + i * nx, As + i * ny, sizeof(double) * nx);
            memcpy(Bcs + i * nm, As + i * ny + nx, sizeof(double) * nu);
            bcs[i] = b[(size_t)s * nx + i];
        }
        for (int r = 0; r < nar; ++r) {
            const int i = ar[r];
            for (int e = 0; e < nac; ++e) {
                const double f = As[i * ny + nz + ac[e]];
                if (f == 0.0) continue;
                const double *Tr = Ts + ac[e] * nz;
                for (int j = 0; j < nx; ++j) Acs[i * nx + j] += f * Tr[j];
                for (int j = 0; j < nu; ++j) Bcs[i * nm + j] += f * Tr[nx + j];
                bcs[i] += f * ts[ac[e]];
            }
        }
    }
    free(X);
    free(rows);
    return 0;
}

void liftoff_expand(int S, int nx, int nu, int nw, const double *H, const double *g, const double *A,
                    const double *LU, const int *piv, const double *T, const double *t, const double *z,
                    const double *lam, double *dw, double *beta) {
    const int nz = nx + nu, ny = nz + nw;
    for (int s = 0; s < S; ++s) {
        const double *Ts = T + (size_t)s * nw * nz, *zs = z + (size_t)s * nz, *Hs = H + (size_t)s * ny * ny;
        const double *As = A + (size_t)s * nx * ny, *ls = lam + (size_t)s * nx, *Hw = Hs + (size_t)nz * ny;
        double *dws = dw + (size_t)s * nw, *bs = beta + (size_t)s * nw;
        /* the rows' sums side by side, each in the order of its terms (one row at a time, each
           product would wait for the previous one) */
        for (int i = 0; i < nw; ++i) dws[i] = t[(size_t)s * nw + i], bs[i] = g[(size_t)s * ny + nz + i];
        for (int j = 0; j < nz; ++j)
            for (int i = 0; i < nw; ++i) dws[i] += Ts[i * nz + j] * zs[j];
        for (int j = 0; j < nz; ++j)
            for (int i = 0; i < nw; ++i) bs[i] += Hw[i * ny + j] * zs[j];
        for (int j = 0; j < nw; ++j)
            for (int i = 0; i < nw; ++i) bs[i] += Hw[i * ny + nz + j] * dws[j];
        for (int r = 0; r < nx; ++r)
            for (int i = 0; i < nw; ++i) bs[i] += As[r * ny + nz + i] * ls[r];
        for (int i = 0; i < nw; ++i) bs[i] = -bs[i];
        lu_solve_transposed(nw, LU + (size_t)s * nw * nw, piv + (size_t)s * nw, bs);
    }
}
