/* The Riccati recursion of solvers/riccati.py, compiled: the same equations on stacked arrays.
 *
 * Row-major arrays, N stages, state size nx, control size nu[i] <= nm per stage (the stage
 * uses the first nu[i] columns of B, Qxu and the leading block of Quu, lu):
 *   A (N, nx, nx), B (N, nx, nm), b (N, nx), Qxx (N, nx, nx), Qxu (N, nx, nm),
 *   Quu (N, nm, nm), lx (N, nx), lu (N, nm), terminal QN (nx, nx), lN (nx), dx0 (nx).
 * Outputs: P (N+1, nx, nx), p (N+1, nx), K (N, nm, nx), k (N, nm), dx (N+1, nx), du (N, nm),
 * lam (N+1, nx). Returns 0, or i + 1 when Quu + B^T P B is not positive definite at stage i.
 *
 * The products are scipy's BLAS (dgemm, dgemv), whose addresses liftoff_set_blas receives
 * once from Python: Fortran routines, every argument by pointer, column-major. A row-major
 * matrix is the column-major storage of its transpose, so the row-major C = A B is the
 * column-major C^T = B^T A^T. The Cholesky factorization of the nu x nu matrix G and its
 * solve stay loops: at nu = 12 they are faster than LAPACK's dpotrf and dpotrs, whose
 * triangular solves alone took a quarter of a stage.
 */
#include <stdlib.h>
#include <string.h>

typedef void gemm_t(const char *, const char *, const int *, const int *, const int *, const double *,
                    const double *, const int *, const double *, const int *, const double *, double *, const int *);
typedef void gemv_t(const char *, const int *, const int *, const double *, const double *, const int *,
                    const double *, const int *, const double *, double *, const int *);

static gemm_t *dgemm;
static gemv_t *dgemv;

/* The routines dgemm and dgemv, in this order. */
void liftoff_set_blas(void **routines) {
    dgemm = (gemm_t *)routines[0];
    dgemv = (gemv_t *)routines[1];
}

/* C = op(A) op(B) + beta C, row-major; op(A) (m, l), op(B) (l, n); op(X) = X^T when t is 'T'. */
static void gemm(char ta, char tb, int m, int n, int l, const double *A, int lda, const double *B, int ldb,
                 double beta, double *C, int ldc) {
    const double alpha = 1.0;
    dgemm(&tb, &ta, &n, &m, &l, &alpha, B, &ldb, A, &lda, &beta, C, &ldc);
}

/* y = op(A) x + beta y, A (m, n) row-major. */
static void gemv(char t, int m, int n, const double *A, int lda, const double *x, double beta, double *y) {
    const char tc = t == 'N' ? 'T' : 'N';
    const int one = 1;
    const double alpha = 1.0;
    dgemv(&tc, &n, &m, &alpha, A, &lda, x, &one, &beta, y, &one);
}

/* Lower Cholesky factor of the n x n matrix G in place; 0 if G is not positive definite. */
static int cholesky(int n, double *G, int ld) {
    for (int j = 0; j < n; ++j) {
        double d = G[j * ld + j];
        for (int r = 0; r < j; ++r) d -= G[j * ld + r] * G[j * ld + r];
        if (!(d > 0.0)) return 0;
        d = __builtin_sqrt(d);
        G[j * ld + j] = d;
        for (int i = j + 1; i < n; ++i) {
            double s = G[i * ld + j];
            for (int r = 0; r < j; ++r) s -= G[i * ld + r] * G[j * ld + r];
            G[i * ld + j] = s / d;
        }
    }
    return 1;
}

/* X <- -(L L^T)^-1 X for X (n, c). */
static void negative_solve(int n, int c, const double *L, int ld, double *X, int ldx) {
    for (int i = 0; i < n; ++i) {
        double *x = X + i * ldx;
        for (int r = 0; r < i; ++r) {
            const double l = L[i * ld + r], *xr = X + r * ldx;
            for (int j = 0; j < c; ++j) x[j] -= l * xr[j];
        }
        for (int j = 0; j < c; ++j) x[j] /= L[i * ld + i];
    }
    for (int i = n - 1; i >= 0; --i) {
        double *x = X + i * ldx;
        for (int r = i + 1; r < n; ++r) {
            const double l = L[r * ld + i], *xr = X + r * ldx;
            for (int j = 0; j < c; ++j) x[j] -= l * xr[j];
        }
        for (int j = 0; j < c; ++j) x[j] /= L[i * ld + i];
    }
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < c; ++j) X[i * ldx + j] = -X[i * ldx + j];
}

int liftoff_riccati(int N, int nx, int nm, const int *nu,
                    const double *A, const double *B, const double *b, const double *Qxx, const double *Qxu,
                    const double *Quu, const double *lx, const double *lu, const double *QN, const double *lN,
                    const double *dx0, double *P, double *p, double *K, double *k, double *dx, double *du, double *lam) {
    const int xx = nx * nx, xm = nx * nm, mm = nm * nm, L = nx + nm;
    double *PAB = malloc(sizeof(double) * (nx * L + xm + nx + mm + nm * (nx + 1)));
    if (!PAB) return -1;
    double *H = PAB + nx * L, *co = H + xm, *G = co + nx, *X = G + mm;
    memcpy(P + N * xx, QN, sizeof(double) * xx);
    memcpy(p + N * nx, lN, sizeof(double) * nx);
    memset(K, 0, sizeof(double) * N * nm * nx);
    memset(k, 0, sizeof(double) * N * nm);
    memset(du, 0, sizeof(double) * N * nm);
    for (int i = N - 1; i >= 0; --i) {
        const int m = nu[i];
        const double *Ai = A + i * xx, *Bi = B + i * xm, *Pn = P + (i + 1) * xx;
        double *Pi = P + i * xx, *pi = p + i * nx, *Ki = K + i * nm * nx, *ki = k + i * nm;
        /* [PA PB] (nx, nx + m), co = P b + p */
        gemm('N', 'N', nx, nx, nx, Pn, nx, Ai, nx, 0.0, PAB, L);
        if (m > 0) gemm('N', 'N', nx, m, nx, Pn, nx, Bi, nm, 0.0, PAB + nx, L);
        memcpy(co, p + (i + 1) * nx, sizeof(double) * nx);
        gemv('N', nx, nx, Pn, nx, b + i * nx, 1.0, co);
        /* P_i = Qxx + A^T PA, H = Qxu + A^T PB, p_i = lx + A^T co, G = Quu + B^T PB */
        memcpy(Pi, Qxx + i * xx, sizeof(double) * xx);
        gemm('T', 'N', nx, nx, nx, Ai, nx, PAB, L, 1.0, Pi, nx);
        memcpy(H, Qxu + i * xm, sizeof(double) * xm);
        if (m > 0) gemm('T', 'N', nx, m, nx, Ai, nx, PAB + nx, L, 1.0, H, nm);
        memcpy(pi, lx + i * nx, sizeof(double) * nx);
        gemv('T', nx, nx, Ai, nx, co, 1.0, pi);
        if (m > 0) {
            const int nrhs = nx + 1;
            for (int r = 0; r < m; ++r) memcpy(G + r * nm, Quu + i * mm + r * nm, sizeof(double) * m);
            gemm('T', 'N', m, m, nx, Bi, nm, PAB + nx, L, 1.0, G, nm);
            if (!cholesky(m, G, nm)) {
                free(PAB);
                return i + 1;
            }
            /* [K k] = -G^-1 [H^T, lu + B^T co]; P_i += H K, p_i += H k */
            memcpy(ki, lu + i * nm, sizeof(double) * m);
            gemv('T', nx, m, Bi, nm, co, 1.0, ki);
            for (int r = 0; r < m; ++r) {
                for (int j = 0; j < nx; ++j) X[r * nrhs + j] = H[j * nm + r];
                X[r * nrhs + nx] = ki[r];
            }
            negative_solve(m, nrhs, G, nm, X, nrhs);
            for (int r = 0; r < m; ++r) {
                memcpy(Ki + r * nx, X + r * nrhs, sizeof(double) * nx);
                ki[r] = X[r * nrhs + nx];
            }
            gemm('N', 'N', nx, nx, m, H, nm, Ki, nx, 1.0, Pi, nx);
            gemv('N', nx, m, H, nm, ki, 1.0, pi);
        }
        for (int r = 0; r < nx; ++r)
            for (int j = r + 1; j < nx; ++j) {
                const double s = 0.5 * (Pi[r * nx + j] + Pi[j * nx + r]);
                Pi[r * nx + j] = s;
                Pi[j * nx + r] = s;
            }
    }
    memcpy(dx, dx0, sizeof(double) * nx);
    for (int i = 0; i < N; ++i) {
        const int m = nu[i];
        double *dui = du + i * nm, *next = dx + (i + 1) * nx;
        memcpy(next, b + i * nx, sizeof(double) * nx);
        gemv('N', nx, nx, A + i * xx, nx, dx + i * nx, 1.0, next);
        if (m > 0) {
            memcpy(dui, k + i * nm, sizeof(double) * m);
            gemv('N', m, nx, K + i * nm * nx, nx, dx + i * nx, 1.0, dui);
            gemv('N', nx, m, B + i * xm, nm, dui, 1.0, next);
        }
    }
    for (int i = 0; i <= N; ++i) {
        memcpy(lam + i * nx, p + i * nx, sizeof(double) * nx);
        gemv('N', nx, nx, P + i * xx, nx, dx + i * nx, 1.0, lam + i * nx);
    }
    free(PAB);
    return 0;
}
