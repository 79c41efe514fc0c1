/* The Riccati recursion of solvers/riccati.py, compiled: the same equations on stacked arrays.
 *
 * Row-major arrays, N stages, state size nx, control size nu[i] <= nm per stage (the stage
 * uses the first nu[i] columns of B, Qxu and the leading block of Quu, lu):
 *   A (N, nx, nx), B (N, nx, nm), b (N, nx), Qxx (N, nx, nx), Qxu (N, nx, nm),
 *   Quu (N, nm, nm), lx (N, nx), lu (N, nm), terminal QN (nx, nx), lN (nx), dx0 (nx).
 * Outputs: P (N+1, nx, nx), p (N+1, nx), K (N, nm, nx), k (N, nm), dx (N+1, nx), du (N, nm),
 * lam (N+1, nx). Returns 0, i + 1 when Quu + B^T P B is not positive definite at stage i, or -1
 * when the workspace cannot be allocated.
 *
 * Each stage of the backward recursion, with P, p those of the next stage and m = nu[i]:
 *   AB = [A B]                                    (nx, nx + m)
 *   M = P AB = [PA PB]
 *   X = (PB)^T AB + [Qxu^T Quu^T] = [H^T G^T]     H = Qxu + A^T P B, G = Quu + B^T P B
 *   co = P b + p,  q = AB^T co = [A^T co; B^T co]
 *   [Z z] = G^-1 [H^T, lu + B^T co],  K = -Z, k = -z
 *   P_i = Qxx + [A; -H^T]^T [PA; Z] = Qxx + A^T P A + H K,  symmetrized
 *   p_i = lx + A^T co + H k
 * then the rollout du_i = K dx_i + k, dx_{i+1} = A dx_i + B du_i + b, lam_i = P_i dx_i + p_i.
 *
 * The products are loops, not BLAS calls: at nx = 18 to 36 a call's fixed cost is of the order
 * of its arithmetic. The workspace rows are padded to whole vectors of 8 doubles (vectors.h),
 * and M, X and P_i are one kernel (product()) that keeps a block of rows of its result in
 * registers (8 rows of 24 columns with AVX-512, 4 rows of 8 with AVX2). G is solved as L D L^T
 * by eliminations on the rows of X; it enters through its entries on and below the diagonal
 * (those of G^T on and above), the ones numpy's Cholesky reads. P_i is exactly symmetric: the
 * kernel forms the 8 x 8 blocks of A^T P A + H K on and above the diagonal, and each block and
 * its mirror are written from one sum, with 1/2 (Qxx + Qxx^T), as the symmetrization
 * 1/2 (P_i + P_i^T) adds Qxx. The next stage reads P_i b from the padded copy of P_i, read by
 * rows as P_i^T; the terminal QN, taken as given, is copied there transposed, and stage N - 1
 * forms A^T QN A as A^T 1/2 (QN + QN^T) A, which its symmetrization makes it.
 */
#include <stdlib.h>
#include <string.h>

#include "vectors.h"

/* dst[:n] = s src[:n]: whole vectors, the last one ending at n (it may overlap the one before;
   the clamped offset also keeps the compiler from turning the loop into a call to memcpy) */
static inline void copy(int n, double s, const double *src, double *dst) {
    if (n < 8) {
        for (int c = 0; c < n; ++c) dst[c] = s * src[c];
        return;
    }
    for (int c = 0; c < n; c += 8) {
        const int at = c < n - 8 ? c : n - 8;
        store(dst + at, s * load(src + at));
    }
}

/* The blocks of sums that product() and matvec() keep in registers: BLOCK_ROWS rows of
   BLOCK_VECTORS vectors, beside one vector of the rows they combine and a broadcast factor.
   AVX-512: 8 rows of 3 vectors, 28 of its 32 registers. Otherwise rows of one vector: 4 of
   them (AVX2's lanes of 4: 8 sums and 3 more of its 16 registers; 6 rows, 15 registers, ran
   slower), or 2 with lanes of 2 in 16 registers. EACH_ROW_COUNT(CASE) is CASE(R) for R = 1 ..
   BLOCK_ROWS: the cases of a switch over a block's rows. */
#if LANES == 8
#define BLOCK_ROWS 8
#define BLOCK_VECTORS 3
#define EACH_ROW_COUNT(CASE) CASE(1) CASE(2) CASE(3) CASE(4) CASE(5) CASE(6) CASE(7) CASE(8)
#elif LANES == 2 && REGISTERS == 16
#define BLOCK_ROWS 2
#define BLOCK_VECTORS 1
#define EACH_ROW_COUNT(CASE) CASE(1) CASE(2)
#else
#define BLOCK_ROWS 4
#define BLOCK_VECTORS 1
#define EACH_ROW_COUNT(CASE) CASE(1) CASE(2) CASE(3) CASE(4)
#endif

/* Rows 0 .. R - 1 of y = y0 + M x, n >= 8: eight sums of products per row (as lanes) over whole
   vectors, the last one over the columns n - 8 .. n - 1 with xs, x there with the columns
   already counted zeroed; then the eight added in pairs, pairs of pairs and halves, the same
   additions at every lane width. */
static inline __attribute__((always_inline)) void matvec_rows(int R, int n, const double *M, int ld, const double *x,
                                                              const double *xs, const double *y0, double *y) {
    lane s[BLOCK_ROWS][PARTS];
    for (int k = 0; k < R; ++k)
        for (int l = 0; l < PARTS; ++l) s[k][l] = (lane){0};
    for (int c = 0; c + 8 <= n; c += 8)
        for (int l = 0; l < PARTS; ++l) {
            const lane xc = load_lane(x + c + LANES * l);
            for (int k = 0; k < R; ++k) s[k][l] += load_lane(M + k * ld + c + LANES * l) * xc;
        }
    if (n % 8)
        for (int l = 0; l < PARTS; ++l) {
            const lane xc = load_lane(xs + LANES * l);
            for (int k = 0; k < R; ++k) s[k][l] += load_lane(M + k * ld + n - 8 + LANES * l) * xc;
        }
    for (int k = 0; k < R; ++k) {
        double e[8];
        for (int l = 0; l < PARTS; ++l) store_lane(e + LANES * l, s[k][l]);
        y[k] = y0[k] + (((e[0] + e[1]) + (e[2] + e[3])) + ((e[4] + e[5]) + (e[6] + e[7])));
    }
}

/* y = y0 + M x for M (rows, n) row-major with stride ld (y may be y0), BLOCK_ROWS rows at a time. */
static void matvec(int rows, int n, const double *M, int ld, const double *x, const double *y0, double *y) {
    if (n < 8) {
        for (int r = 0; r < rows; ++r) {
            double s = 0.0;
            for (int c = 0; c < n; ++c) s += M[r * ld + c] * x[c];
            y[r] = y0[r] + s;
        }
        return;
    }
    double xs[8];
    for (int l = 0; l < 8; ++l) xs[l] = l < 8 - n % 8 ? 0.0 : x[n - 8 + l];
    for (int r = 0; r < rows; r += BLOCK_ROWS) {
        const int R = rows - r < BLOCK_ROWS ? rows - r : BLOCK_ROWS;
        switch (R) {
#define MATVEC_ROWS(R)                                                                                                 \
    case R: matvec_rows(R, n, M + r * ld, ld, x, xs, y0 + r, y + r); break;
            EACH_ROW_COUNT(MATVEC_ROWS)
#undef MATVEC_ROWS
        }
    }
}

/* Rows 0 .. R - 1 and nv <= BLOCK_VECTORS vectors of C = sum_{c < n} a(r, c) Y[c, :],
   a(r, c) = a[r * sr + c * sc]: the R x nv vectors of C in registers (as lanes), each row of Y
   loaded once for the R rows. */
static inline __attribute__((always_inline)) void product_block(int R, int nv, int n, const double *a, int sr, int sc,
                                                                const double *Y, int ldy, double *C, int ldc) {
    lane s[BLOCK_ROWS][BLOCK_VECTORS * PARTS];
    const int nl = nv * PARTS;
    for (int k = 0; k < R; ++k)
        for (int l = 0; l < nl; ++l) s[k][l] = (lane){0};
    for (int c = 0; c < n; ++c) {
        lane y[BLOCK_VECTORS * PARTS];
        for (int l = 0; l < nl; ++l) y[l] = load_lane(Y + c * ldy + LANES * l);
        for (int k = 0; k < R; ++k) {
            const double f = a[k * sr + c * sc];
            for (int l = 0; l < nl; ++l) s[k][l] += f * y[l];
        }
    }
    for (int k = 0; k < R; ++k)
        for (int l = 0; l < nl; ++l) store_lane(C + k * ldc + LANES * l, s[k][l]);
}

/* product_block() compiled for each R <= BLOCK_ROWS and nv <= BLOCK_VECTORS. */
static void product_blocks(int R, int nv, int n, const double *a, int sr, int sc, const double *Y, int ldy, double *C,
                           int ldc) {
#if BLOCK_VECTORS == 3
#define ROWS(R)                                                                                                        \
    case R:                                                                                                            \
        switch (nv) {                                                                                                  \
        case 1: product_block(R, 1, n, a, sr, sc, Y, ldy, C, ldc); break;                                             \
        case 2: product_block(R, 2, n, a, sr, sc, Y, ldy, C, ldc); break;                                             \
        case 3: product_block(R, 3, n, a, sr, sc, Y, ldy, C, ldc); break;                                             \
        }                                                                                                              \
        break;
#else
#define ROWS(R)                                                                                                        \
    case R: product_block(R, 1, n, a, sr, sc, Y, ldy, C, ldc); break;
#endif
    switch (R) { EACH_ROW_COUNT(ROWS) }
#undef ROWS
}

/* C[r, :] = sum_{c < n} a(r, c) Y[c, :] over nv vectors of columns (Y's and C's rows padded to
   them), r < rows, a(r, c) = a[r * sr + c * sc]; with upper, only the vectors from the one
   holding column r (the 8 x 8 blocks on and above the diagonal). Rows BLOCK_ROWS at a time,
   their vectors in runs of at most BLOCK_VECTORS of equal length. */
static void product(int rows, int nv, int n, const double *a, int sr, int sc, const double *Y, int ldy, double *C,
                    int ldc, int upper) {
    for (int r = 0; r < rows; r += BLOCK_ROWS) {
        const int R = rows - r < BLOCK_ROWS ? rows - r : BLOCK_ROWS;
        int v = upper ? r / 8 : 0, left = nv - v;
        for (int runs = (left + BLOCK_VECTORS - 1) / BLOCK_VECTORS; runs > 0; --runs) {
            const int run = (left + runs - 1) / runs;
            product_blocks(R, run, n, a + r * sr, sr, sc, Y + 8 * v, ldy, C + r * ldc + 8 * v, ldc);
            v += run, left -= run;
        }
    }
}

/* y = sum_{r < n} x[r] M[r, :] over nv vectors of columns (M's rows of stride ld): M^T x. */
static void combine_rows(int n, const double *x, const double *M, int ld, int nv, double *y) {
    product(1, nv, n, x, 0, 1, M, ld, y, 0, 0);
}

/* The rows X_j = [H^T_j G^T_j] (m rows of stride w, the m columns of G^T from nx) and g: the
   first nvx vectors of X <- G^-1 X and g <- G^-1 g, with G the symmetric matrix of the entries
   on and above the diagonal of G^T; 0 if G is not positive definite. G = L D L^T: row j, divided
   by its pivot D_j = X_j[nx + j], eliminated from the rows below it (on whole rows, L_ij =
   X_j[nx + i] / D_j kept in L) gives X <- D^-1 L^-1 X; then X <- L^-T X from the last row up. */
static int solve(int m, int nx, int nv, int nvx, double *X, int w, double *g, double *L, double *c) {
    for (int j = 0; j < m; ++j) {
        double *xj = X + j * w;
        const double D = xj[nx + j];
        if (!(D > 0.0)) return 0;
        for (int i = j + 1; i < m; ++i) c[i] = xj[nx + i];
        const double s = 1.0 / D;
        for (int v = 0; v < nv; ++v) store(xj + 8 * v, s * load(xj + 8 * v));
        g[j] *= s;
        for (int i = j + 1; i < m; ++i) {
            double *xi = X + i * w;
            L[i * m + j] = xj[nx + i];
            for (int v = 0; v < nv; ++v) store(xi + 8 * v, load(xi + 8 * v) - c[i] * load(xj + 8 * v));
            g[i] -= c[i] * g[j];
        }
    }
    for (int r = m - 1; r > 0; --r) {
        const double *xr = X + r * w;
        for (int i = 0; i < r; ++i) {
            double *xi = X + i * w;
            const double l = L[r * m + i];
            for (int v = 0; v < nvx; ++v) store(xi + 8 * v, load(xi + 8 * v) - l * load(xr + 8 * v));
            g[i] -= l * g[r];
        }
    }
    return 1;
}

/* Pp = 1/2 (Qxx + Qxx^T) + S by 8 x 8 blocks (nb x nb of them, rows of stride wx), S on and
   above the diagonal blocks: in a diagonal block 1/2 (W + W^T) with W = S + Qxx, in a block above
   it S + 1/2 (Qxx + Qxx^T), and in its mirror that block transposed. Qp holds Qxx padded. */
static void symmetrize(int nb, int wx, const double *S, const double *Qp, double *Pp) {
    for (int r = 0; r < wx; ++r) {
        const int diagonal_end = (r / 8 + 1) * 8;
        for (int c = r / 8 * 8; c < diagonal_end; ++c)
            Pp[r * wx + c] = 0.5 * ((S[r * wx + c] + Qp[r * wx + c]) + (S[c * wx + r] + Qp[c * wx + r]));
        for (int c = diagonal_end; c < 8 * nb; ++c)
            Pp[r * wx + c] = Pp[c * wx + r] = S[r * wx + c] + 0.5 * (Qp[r * wx + c] + Qp[c * wx + r]);
    }
}

int liftoff_riccati(int N, int nx, int nm, const int *nu, const double *A, const double *B, const double *b,
                    const double *Qxx, const double *Qxu, const double *Quu, const double *lx, const double *lu,
                    const double *QN, const double *lN, const double *dx0, double *P, double *p, double *K, double *k,
                    double *dx, double *du, double *lam) {
    /* the workspace, rows padded to vectors: AB and M (nx + nm, ld), with H^T (below A's rows of
       AB, as -H^T) and X (below M's rows); S, Qp, Pp (wx, wx); q (ld); co, h (wx); g, c (nm);
       L (nm, nm). Zeroed once: the rows of S and Qp beyond nx, which the blocks read, stay zero. */
    const int xx = nx * nx, xm = nx * nm, mm = nm * nm, wx = (nx + 7) / 8 * 8, nb = wx / 8, ld = (nx + nm + 7) / 8 * 8;
    const size_t size = (size_t)2 * (nx + nm) * ld + (size_t)3 * wx * wx + ld + 2 * wx + 2 * nm + mm;
    double *AB = aligned_alloc(64, (sizeof(double) * size + 63) / 64 * 64);
    if (!AB) return -1;
    memset(AB, 0, sizeof(double) * size);
    double *M = AB + (nx + nm) * ld, *S = M + (nx + nm) * ld, *Qp = S + wx * wx, *Pp = Qp + wx * wx;
    double *q = Pp + wx * wx, *co = q + ld, *h = co + wx, *g = h + wx, *c = g + nm, *L = c + nm;
    memcpy(P + N * xx, QN, sizeof(double) * xx);
    memcpy(p + N * nx, lN, sizeof(double) * nx);
    for (int r = 0; r < nx; ++r)
        for (int j = 0; j < nx; ++j) Pp[j * wx + r] = QN[r * nx + j];
    for (int i = N - 1; i >= 0; --i) {
        const int m = nu[i], w = (nx + m + 7) / 8 * 8, nv = w / 8;
        const double *Ai = A + i * xx, *Bi = B + i * xm, *Pn = P + (i + 1) * xx, *pn = p + (i + 1) * nx;
        double *Pi = P + i * xx, *pi = p + i * nx, *Ki = K + i * nm * nx, *ki = k + i * nm, *X = M + nx * w;
        memset(Ki + m * nx, 0, sizeof(double) * (nm - m) * nx);
        memset(ki + m, 0, sizeof(double) * (nm - m));
        memset(du + i * nm + m, 0, sizeof(double) * (nm - m));
        for (int r = 0; r < nx; ++r) { /* AB, zero from column nx + m */
            store(AB + r * w + w - 8, (vec){0});
            copy(nx, 1.0, Ai + r * nx, AB + r * w);
            copy(m, 1.0, Bi + r * nm, AB + r * w + nx);
        }
        product(nx, nv, nx, Pn, nx, 1, AB, w, M, w, 0);
        if (i == N - 1) { /* PA <- 1/2 (QN + QN^T) A */
            product(nx, nb, nx, Pn, 1, nx, AB, w, S, wx, 0);
            for (int r = 0; r < nx; ++r)
                for (int j = 0; j < nx; ++j) M[r * w + j] = 0.5 * (M[r * w + j] + S[r * wx + j]);
        }
        combine_rows(nx, b + i * nx, Pp, wx, nb, co); /* co = P b + p, P b = (P^T)^T b */
        for (int r = 0; r < nx; ++r) co[r] += pn[r];
        combine_rows(nx, co, AB, w, nv, q); /* q = AB^T co */
        if (m > 0) {
            product(m, nv, nx, M + nx, 1, w, AB, w, X, w, 0);
            for (int j = 0; j < m; ++j) {
                double *x = X + j * w;
                for (int r = 0; r < nx; ++r) x[r] += Qxu[i * xm + r * nm + j];
                for (int l = j; l < m; ++l) x[nx + l] += Quu[i * mm + l * nm + j];
                g[j] = lu[i * nm + j] + q[nx + j];
                for (int v = 0; v < nb; ++v) store(AB + (nx + j) * w + 8 * v, -load(x + 8 * v));
            }
            if (!solve(m, nx, nv, nb, X, w, g, L, c)) {
                free(AB);
                return i + 1;
            }
            for (int j = 0; j < m; ++j) {
                copy(nx, -1.0, X + j * w, Ki + j * nx);
                ki[j] = -g[j];
            }
        }
        product(nx, nb, nx + m, AB, 1, w, M, w, S, wx, 1);
        for (int r = 0; r < nx; ++r) copy(nx, 1.0, Qxx + i * xx + r * nx, Qp + r * wx);
        symmetrize(nb, wx, S, Qp, Pp);
        for (int r = 0; r < nx; ++r) copy(nx, 1.0, Pp + r * wx, Pi + r * nx);
        combine_rows(m, g, AB + nx * w, w, nb, h); /* h = H k = (-H^T)^T z */
        for (int r = 0; r < nx; ++r) pi[r] = lx[i * nx + r] + q[r] + h[r];
    }
    free(AB);
    memcpy(dx, dx0, sizeof(double) * nx);
    for (int i = 0; i < N; ++i) {
        const int m = nu[i];
        const double *dxi = dx + i * nx;
        double *next = dx + (i + 1) * nx, *dui = du + i * nm;
        matvec(nx, nx, A + i * xx, nx, dxi, b + i * nx, next);
        if (m > 0) {
            matvec(m, nx, K + i * nm * nx, nx, dxi, k + i * nm, dui);
            matvec(nx, m, B + i * xm, nm, dui, next, next);
        }
        matvec(nx, nx, P + i * xx, nx, dxi, p + i * nx, lam + i * nx);
    }
    matvec(nx, nx, P + N * xx, nx, dx + N * nx, p + N * nx, lam + N * nx);
    return 0;
}
