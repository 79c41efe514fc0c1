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
 * column-major C^T = B^T A^T). The LU factorization of Cw and its solve with the nz + 1 columns
 * of [C_z c] (the largest product of the condensing) are loops over vectors of 8 doubles
 * (vectors.h) in a workspace whose rows are padded to whole vectors; the solve runs four rows at
 * a time, their sums in registers as the processor's lanes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vectors.h"

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

/* The first row i >= k of the largest |u[i * ldm]|, i < n: four running maxima side by side,
   over the rows k + c, k + c + 4, ... for c = 0 .. 3 (a single one would wait for each
   comparison in turn), then the largest of the four, the first row on ties. */
static int pivot(int n, int k, const double *u, int ldm) {
    double best[4] = {-1.0, -1.0, -1.0, -1.0};
    int at[4] = {k, k, k, k}, i = k;
    for (; i + 4 <= n; i += 4)
        for (int c = 0; c < 4; ++c) {
            const double v = fabs(u[(i + c) * ldm]);
            if (v > best[c]) best[c] = v, at[c] = i + c;
        }
    for (; i < n; ++i) {
        const double v = fabs(u[i * ldm]);
        if (v > best[0]) best[0] = v, at[0] = i;
    }
    int p = at[0];
    for (int c = 1; c < 4; ++c)
        if (best[c] > best[0] || (best[c] == best[0] && at[c] < p)) best[0] = best[c], p = at[c];
    return p;
}

/* LU of the n x n matrix in the rows of U (stride ldm, a multiple of 8; zero beyond column n)
   with row pivots, as LAPACK's dgetf2: U its upper triangle, the multipliers of L below the
   diagonal of L (same stride, its rows swapped with U's), d the inverses of U's diagonal; 0 if
   singular. Each row's update runs over whole vectors from the one holding column k: what
   falls left of the diagonal of U is never read. The multipliers are quotients by the pivot
   (not products with its inverse, as dgetf2 scales): a row equal to the pivot's (a contact
   listed twice) then has a multiplier of exactly 1 and leaves a zero row, a singular Cw. */
static int lu_factor(int n, int ldm, double *U, double *L, double *d, int *piv) {
    const int nvec = ldm / 8;
    for (int k = 0; k < n; ++k) {
        const int p = pivot(n, k, U + k, ldm);
        piv[k] = p;
        if (!(fabs(U[p * ldm + k]) > 0.0)) return 0;
        if (p != k)
            for (int v = 0; v < nvec; ++v) {
                double *uk = U + k * ldm + 8 * v, *up = U + p * ldm + 8 * v;
                double *lk = L + k * ldm + 8 * v, *lp = L + p * ldm + 8 * v;
                const vec u = load(uk), l = load(lk);
                store(uk, load(up)), store(up, u);
                store(lk, load(lp)), store(lp, l);
            }
        const double *uk = U + k * ldm;
        d[k] = 1.0 / uk[k];
        for (int i = k + 1; i < n; ++i) {
            double *ui = U + i * ldm;
            const double f = ui[k] / uk[k];
            L[i * ldm + k] = f;
            for (int v = k / 8; v < nvec; ++v) store(ui + 8 * v, load(ui + 8 * v) - f * load(uk + 8 * v));
        }
    }
    return 1;
}

/* The columns that lu_solve() solves at a time, in vectors: four rows of them in registers as
   lanes, beside a row of them and a factor. AVX-512: 2 (8 of its 32 registers for the sums);
   otherwise 1 (AVX2: 8 of its 16). */
#if LANES == 8
#define SOLVE_VECTORS 2
#else
#define SOLVE_VECTORS 1
#endif

/* Rows i .. i + 3 of Y <- L^-1 Y over the nvec vectors of columns from j0: their sums over the
   rows r < i solved before, which load each row of Y once for the four (in registers), then
   the triangle of L within the four rows. The sums run over r in increasing order, zeros
   included: L has few. */
static inline __attribute__((always_inline)) void forward_rows(int nvec, int i, int j0, const double *L, int ldm,
                                                               double *X, int ld) {
    const int nl = nvec * PARTS;
    lane a[4][SOLVE_VECTORS * PARTS];
    for (int k = 0; k < 4; ++k)
        for (int v = 0; v < nl; ++v) a[k][v] = load_lane(X + (i + k) * ld + j0 + LANES * v);
    for (int r = 0; r < i; ++r) {
        lane x[SOLVE_VECTORS * PARTS];
        for (int v = 0; v < nl; ++v) x[v] = load_lane(X + r * ld + j0 + LANES * v);
        for (int k = 0; k < 4; ++k) {
            const double l = L[(i + k) * ldm + r];
            for (int v = 0; v < nl; ++v) a[k][v] -= l * x[v];
        }
    }
    for (int k = 1; k < 4; ++k)
        for (int b = 0; b < k; ++b) {
            const double l = L[(i + k) * ldm + i + b];
            for (int v = 0; v < nl; ++v) a[k][v] -= l * a[b][v];
        }
    for (int k = 0; k < 4; ++k)
        for (int v = 0; v < nl; ++v) store_lane(X + (i + k) * ld + j0 + LANES * v, a[k][v]);
}

/* Rows i .. i + 3 of X <- U^-1 X, n rows: the sums over the rows r > i + 3 solved before, from
   the last (the rows solved just before enter last: the sums need not wait for them), then the
   triangle of U within the four rows from the bottom; the division by U_ii a product with its
   inverse d[i]. */
static inline __attribute__((always_inline)) void backward_rows(int nvec, int n, int i, int j0, const double *U,
                                                                int ldm, const double *d, double *X, int ld) {
    const int nl = nvec * PARTS;
    lane a[4][SOLVE_VECTORS * PARTS];
    for (int k = 0; k < 4; ++k)
        for (int v = 0; v < nl; ++v) a[k][v] = load_lane(X + (i + k) * ld + j0 + LANES * v);
    for (int r = n - 1; r > i + 3; --r) {
        lane x[SOLVE_VECTORS * PARTS];
        for (int v = 0; v < nl; ++v) x[v] = load_lane(X + r * ld + j0 + LANES * v);
        for (int k = 0; k < 4; ++k) {
            const double u = U[(i + k) * ldm + r];
            for (int v = 0; v < nl; ++v) a[k][v] -= u * x[v];
        }
    }
    for (int k = 3; k >= 0; --k) {
        for (int b = 3; b > k; --b) {
            const double u = U[(i + k) * ldm + i + b];
            for (int v = 0; v < nl; ++v) a[k][v] -= u * a[b][v];
        }
        for (int v = 0; v < nl; ++v) a[k][v] *= d[i + k];
    }
    for (int k = 0; k < 4; ++k)
        for (int v = 0; v < nl; ++v) store_lane(X + (i + k) * ld + j0 + LANES * v, a[k][v]);
}

/* X <- (L U)^-1 X for X (n, ld), n a multiple of 4 and ld of 8, its rows already permuted by the
   pivots of lu_factor() (rows beyond the matrix's: L zero, U the identity, X zero). Four rows at
   a time, each a sum over the rows solved before it (L y_i = x_i - sum_{r < i} L_ir y_r, then
   U x_i = y_i - sum_{r > i} U_ir x_r), SOLVE_VECTORS vectors of columns at a time (with 2, the
   last 8 columns alone): the four rows share the loads of the rows they sum. d: the inverses of
   U's diagonal. */
static void lu_solve(int n, int ld, const double *L, const double *U, int ldm, const double *d, double *X) {
    const int step = 8 * SOLVE_VECTORS;
    for (int i = 0; i < n; i += 4)
        for (int j0 = 0; j0 < ld; j0 += step)
            if (j0 + step <= ld) forward_rows(SOLVE_VECTORS, i, j0, L, ldm, X, ld);
            else forward_rows(1, i, j0, L, ldm, X, ld);
    for (int i = n - 4; i >= 0; i -= 4)
        for (int j0 = 0; j0 < ld; j0 += step)
            if (j0 + step <= ld) backward_rows(SOLVE_VECTORS, n, i, j0, U, ldm, d, X, ld);
            else backward_rows(1, n, i, j0, U, ldm, d, X, ld);
}

/* x <- M^-T x for the n x n M = P^T L U from lu_factor(), packed: U^T y = x, then L^T z = y, then
   x = P^T z. Each solved entry is subtracted from the entries after it at once, along its row
   of U (of L): the rows are contiguous, and the sums are not chains of one term after another. */
static void lu_solve_transposed(int n, const double *M, const int *piv, double *x) {
    for (int r = 0; r < n; ++r) {
        const double *Mr = M + r * n;
        const double xr = (x[r] /= Mr[r]);
        for (int i = r + 1; i < n; ++i) x[i] -= Mr[i] * xr;
    }
    for (int r = n - 1; r > 0; --r) {
        const double *Mr = M + r * n, xr = x[r];
        for (int i = 0; i < r; ++i) x[i] -= Mr[i] * xr;
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
    /* the workspace of the solve: U and L (n4, ldm), X (n4, ld) with n4 = nw rounded up to 4 rows
       and ldm, ld = nw, nz + 1 rounded up to 8 columns; rows beyond nw: L zero, U the identity
       (d its inverse), X zero, so that lu_solve() runs on whole blocks */
    const int nz = nx + nu, ny = nz + nw, n4 = (nw + 3) / 4 * 4, ldm = (nw + 7) / 8 * 8, ld = (nz + 8) / 8 * 8;
    const size_t solve = (size_t)2 * n4 * ldm + (size_t)n4 * ld;
    const size_t size = sizeof(double) * (solve + n4 + 2 * nw * ld + nw + nz * nz + nz);
    double *U = aligned_alloc(64, (size + 63) / 64 * 64);
    int *rows = malloc(sizeof(int) * ((nww > nw ? nww : nw) + nx));
    if (!U || !rows) {
        free(U);
        free(rows);
        return -1;
    }
    double *L = U + n4 * ldm, *X = L + n4 * ldm, *d = X + n4 * ld, *Tw = d + n4, *HT = Tw + nw * ld, *gw = HT + nw * ld;
    double *Qs = gw + nw, *ls = Qs + nz * nz;
    memset(U, 0, sizeof(double) * solve);
    for (int i = nw; i < n4; ++i) U[i * ldm + i] = 1.0, d[i] = 1.0;
    int *inar = rows + (nww > nw ? nww : nw); /* whether a row of A_w is one of ar */
    memset(inar, 0, sizeof(int) * nx);
    for (int r = 0; r < nar; ++r) inar[ar[r]] = 1;
    for (int s = 0; s < S; ++s) {
        const double *Hs = H + (size_t)s * ny * ny, *gs = g + (size_t)s * ny, *Cs = C + (size_t)s * nw * ny;
        const double *As = A + (size_t)s * nx * ny;
        double *M = LU + (size_t)s * nw * nw, *Ts = T + (size_t)s * nw * nz, *ts = t + (size_t)s * nw;
        int *ps = piv + (size_t)s * nw;
        const size_t k = (size_t)index[s];
        for (int i = 0; i < nw; ++i) memcpy(U + i * ldm, Cs + i * ny + nz, sizeof(double) * nw);
        if (!lu_factor(nw, ldm, U, L, d, ps)) {
            free(U);
            free(rows);
            return s + 1;
        }
        for (int i = 0; i < nw; ++i) {
            memcpy(M + i * nw, L + i * ldm, sizeof(double) * i);
            memcpy(M + i * nw + i, U + i * ldm + i, sizeof(double) * (nw - i));
        }
        /* X = -P [C_z c], its rows in the order of the pivots (rows: the permutation); solved,
           X = [T t] (its row i that of w_i) */
        for (int i = 0; i < nw; ++i) rows[i] = i;
        for (int i = 0; i < nw; ++i) {
            const int p = rows[ps[i]];
            rows[ps[i]] = rows[i], rows[i] = p;
        }
        for (int i = 0; i < nw; ++i) {
            double *xi = X + (size_t)i * ld;
            const double *Ci = Cs + (size_t)rows[i] * ny;
            for (int j = 0; j < nz; ++j) xi[j] = -Ci[j];
            xi[nz] = -c[(size_t)s * nw + rows[i]];
        }
        lu_solve(n4, ld, L, U, ldm, d, X);
        for (int i = 0; i < nw; ++i) {
            memcpy(Ts + i * nz, X + (size_t)i * ld, sizeof(double) * nz);
            ts[i] = X[(size_t)i * ld + nz];
        }
        /* Q = H_zz + H_zw T + (H_zw T)^T + T^T H_ww T; l = g_z + H_zw t + T^T (g_w + H_ww t). Qs gets
           2 H_zw T, by rows: the symmetrization below takes half of it and half of its transpose */
        for (int i = 0; i < nz; ++i) {
            memcpy(Qs + i * nz, Hs + i * ny, sizeof(double) * nz);
            ls[i] = gs[i];
        }
        for (int i = 0; i < nw; ++i) gw[i] = gs[nz + i];
        for (int i = 0; i < nz; ++i)
            for (int a = 0; a < nzw; ++a) {
                const double h = Hs[i * ny + nz + zw[a]];
                if (h == 0.0) continue;
                const double *Tr = X + zw[a] * ld, twice = 2.0 * h;
                double *Qi = Qs + i * nz;
                for (int j = 0; j < nz; ++j) Qi[j] += twice * Tr[j];
                ls[i] += h * Tr[nz];
            }
        /* the rows of ww whose entries of H_ww are not all zero at this stage (H_ww is symmetric:
           their columns too), e.g. the accelerations' where their cost weighs nothing; the whole
           row of H_ww is read (its columns beyond ww are zero), a comparison per entry without a
           branch */
        int na = 0;
        for (int a = 0; a < nww; ++a) {
            const double *h = Hs + (nz + ww[a]) * ny + nz;
            int used = 0;
            for (int e = 0; e < nw; ++e) used |= h[e] != 0.0;
            if (used) rows[na++] = ww[a];
        }
        if (na > 0) { /* Tw = [T t][rows], HT = H_ww[rows, rows] Tw (skipping its zeros): Q += Tw^T HT,
                         g_w[rows] += (H_ww t)[rows], the last column of HT */
            for (int a = 0; a < na; ++a) memcpy(Tw + a * ld, X + rows[a] * ld, sizeof(double) * ld);
            for (int a = 0; a < na; ++a) {
                const double *h = Hs + (nz + rows[a]) * ny + nz;
                double *HTa = HT + a * ld;
                for (int j = 0; j < ld; ++j) HTa[j] = 0.0;
                for (int e = 0; e < na; ++e) {
                    const double f = h[rows[e]];
                    if (f == 0.0) continue;
                    for (int j = 0; j < ld; j += 8) store(HTa + j, load(HTa + j) + f * load(Tw + e * ld + j));
                }
                gw[rows[a]] += HTa[nz];
            }
            gemm('T', 'N', nz, nz, na, Tw, ld, HT, ld, 1.0, Qs, nz);
        }
        for (int a = 0; a < nw; ++a) {
            const double f = gw[a];
            if (f == 0.0) continue;
            const double *Ta = X + a * ld;
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
        /* [Ac Bc] = A_z + A_w T, bc = b + A_w t, a row at a time (the rows ar with A_w's columns ac) */
        double *Acs = Ac + k * nx * nx, *Bcs = Bc + k * nx * nm, *bcs = bc + k * nx;
        for (int i = 0; i < nx; ++i) {
            double *Ai = Acs + i * nx, *Bi = Bcs + i * nm;
            memcpy(Ai, As + i * ny, sizeof(double) * nx);
            memcpy(Bi, As + i * ny + nx, sizeof(double) * nu);
            bcs[i] = b[(size_t)s * nx + i];
            if (!inar[i]) continue;
            for (int e = 0; e < nac; ++e) {
                const double f = As[i * ny + nz + ac[e]];
                if (f == 0.0) continue;
                const double *Tr = X + ac[e] * ld;
                for (int j = 0; j < nx; ++j) Ai[j] += f * Tr[j];
                for (int j = 0; j < nu; ++j) Bi[j] += f * Tr[nx + j];
                bcs[i] += f * Tr[nz];
            }
        }
    }
    free(U);
    free(rows);
    return 0;
}

/* out[k] = sum_j a_kj b_j over j < n for the R <= 4 rows a_k = a + k lda: per row, eight partial
   sums (as lanes) over whole vectors, added in order, then the last terms; the rows side by side,
   each vector of b loaded once for them. */
static inline __attribute__((always_inline)) void dot_rows(int R, const double *a, int lda, const double *b, int n,
                                                           double *out) {
    lane v[4][PARTS];
    for (int k = 0; k < R; ++k)
        for (int l = 0; l < PARTS; ++l) v[k][l] = (lane){0};
    int j = 0;
    for (; j + 8 <= n; j += 8)
        for (int l = 0; l < PARTS; ++l) {
            const lane bl = load_lane(b + j + LANES * l);
            for (int k = 0; k < R; ++k) v[k][l] += load_lane(a + k * lda + j + LANES * l) * bl;
        }
    for (int k = 0; k < R; ++k) {
        double e[8], sum = 0.0;
        for (int l = 0; l < PARTS; ++l) store_lane(e + LANES * l, v[k][l]);
        for (int l = 0; l < 8; ++l) sum += e[l];
        for (int c = j; c < n; ++c) sum += a[k * lda + c] * b[c];
        out[k] = sum;
    }
}

/* out[r] = a_r . b (dot_rows()) for the rows r < rows of a (stride lda), four at a time. */
static void dots(int rows, const double *a, int lda, const double *b, int n, double *out) {
    int r = 0;
    for (; r + 4 <= rows; r += 4) dot_rows(4, a + r * lda, lda, b, n, out + r);
    for (; r < rows; ++r) dot_rows(1, a + r * lda, lda, b, n, out + r);
}

void liftoff_expand(int S, int nx, int nu, int nw, const double *H, const double *g, const double *A,
                    const double *LU, const int *piv, const double *T, const double *t, const double *z,
                    const double *lam, double *dw, double *beta) {
    const int nz = nx + nu, ny = nz + nw;
    for (int s = 0; s < S; ++s) {
        const double *Ts = T + (size_t)s * nw * nz, *zs = z + (size_t)s * nz, *Hs = H + (size_t)s * ny * ny;
        const double *As = A + (size_t)s * nx * ny, *ls = lam + (size_t)s * nx, *Hw = Hs + (size_t)nz * ny;
        double *dws = dw + (size_t)s * nw, *bs = beta + (size_t)s * nw;
        /* dw and H_wy y by rows (contiguous, each a dot product), four at a time; A_w^T lam by the
           rows of A_w */
        dots(nw, Ts, nz, zs, nz, dws);
        for (int i = 0; i < nw; ++i) dws[i] = t[(size_t)s * nw + i] + dws[i];
        for (int i = 0; i < nw; i += 4) {
            const int R = nw - i < 4 ? nw - i : 4;
            double hz[4], hw[4];
            dots(R, Hw + i * ny, ny, zs, nz, hz);
            dots(R, Hw + i * ny + nz, ny, dws, nw, hw);
            for (int k = 0; k < R; ++k) bs[i + k] = g[(size_t)s * ny + nz + i + k] + (hz[k] + hw[k]);
        }
        for (int r = 0; r < nx; ++r)
            for (int i = 0; i < nw; ++i) bs[i] += As[r * ny + nz + i] * ls[r];
        for (int i = 0; i < nw; ++i) bs[i] = -bs[i];
        lu_solve_transposed(nw, LU + (size_t)s * nw * nw, piv + (size_t)s * nw, bs);
    }
}
