/* The Riccati recursion of solvers/riccati.py, compiled: the same equations on stacked arrays.
 *
 * Row-major arrays, N stages, state size nx, control size nu[i] <= nm per stage (the stage
 * uses the first nu[i] columns of B, Qxu and the leading block of Quu, lu):
 *   A (N, nx, nx), B (N, nx, nm), b (N, nx), Qxx (N, nx, nx), Qxu (N, nx, nm),
 *   Quu (N, nm, nm), lx (N, nx), lu (N, nm), terminal QN (nx, nx), lN (nx), dx0 (nx).
 * Outputs: P (N+1, nx, nx), p (N+1, nx), K (N, nm, nx), k (N, nm), dx (N+1, nx), du (N, nm),
 * lam (N+1, nx). Returns 0, or i + 1 when Quu + B^T P B is not positive definite at stage i.
 */
#include <stdlib.h>
#include <string.h>

/* C = beta C + A B, A (m, l) of leading dimension lda, B (l, n), C (m, n). */
static void mul_nn(int m, int n, int l, const double *A, int lda, const double *B, int ldb, double *C, int ldc, int accumulate) {
    for (int i = 0; i < m; ++i) {
        double *c = C + i * ldc;
        if (!accumulate) memset(c, 0, sizeof(double) * n);
        for (int r = 0; r < l; ++r) {
            const double a = A[i * lda + r];
            const double *bb = B + r * ldb;
            for (int j = 0; j < n; ++j) c[j] += a * bb[j];
        }
    }
}

/* C += A^T B, A (l, m), B (l, n), C (m, n); the zeros of A are skipped (the dynamics A, B of
 * the condensed stages are sparse in their configuration rows). */
static void mul_tn(int m, int n, int l, const double *A, int lda, const double *B, int ldb, double *C, int ldc) {
    for (int r = 0; r < l; ++r) {
        const double *a = A + r * lda, *bb = B + r * ldb;
        for (int i = 0; i < m; ++i) {
            const double ai = a[i];
            if (ai == 0.0) continue;
            double *c = C + i * ldc;
            for (int j = 0; j < n; ++j) c[j] += ai * bb[j];
        }
    }
}

/* B <- A^T (n, m) of A (m, n). */
static void transpose(int m, int n, const double *A, int lda, double *B, int ldb) {
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) B[j * ldb + i] = A[i * lda + j];
}

/* y += A x, A (m, n). */
static void mul_v(int m, int n, const double *A, int lda, const double *x, double *y) {
    for (int i = 0; i < m; ++i) {
        double s = 0.0;
        for (int j = 0; j < n; ++j) s += A[i * lda + j] * x[j];
        y[i] += s;
    }
}

/* y += A^T x, A (m, n). */
static void mul_tv(int m, int n, const double *A, int lda, const double *x, double *y) {
    for (int i = 0; i < m; ++i) {
        if (x[i] == 0.0) continue;
        for (int j = 0; j < n; ++j) y[j] += A[i * lda + j] * x[i];
    }
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
    const int xx = nx * nx, xm = nx * nm, mm = nm * nm;
    double *PA = malloc(sizeof(double) * (2 * xx + 2 * xm + nx + mm + xm + nm * (nx + 1)));
    if (!PA) return -1;
    double *PB = PA + xx, *co = PB + xm, *G = co + nx, *H = G + mm, *rhs = H + xm, *X = rhs + nm * (nx + 1);
    memcpy(P + N * xx, QN, sizeof(double) * xx);
    memcpy(p + N * nx, lN, sizeof(double) * nx);
    memset(K, 0, sizeof(double) * N * nm * nx);
    memset(k, 0, sizeof(double) * N * nm);
    memset(du, 0, sizeof(double) * N * nm);
    for (int i = N - 1; i >= 0; --i) {
        const int m = nu[i];
        const double *Ai = A + i * xx, *Bi = B + i * xm, *Pn = P + (i + 1) * xx;
        double *Pi = P + i * xx, *pi = p + i * nx, *Ki = K + i * nm * nx, *ki = k + i * nm;
        /* P A = (A^T P)^T and P B = (B^T P)^T (P is symmetric): products that skip A's zeros */
        memset(X, 0, sizeof(double) * xx);
        mul_tn(nx, nx, nx, Ai, nx, Pn, nx, X, nx);
        transpose(nx, nx, X, nx, PA, nx);
        memset(X, 0, sizeof(double) * m * nx);
        mul_tn(m, nx, nx, Bi, nm, Pn, nx, X, nx);
        transpose(m, nx, X, nx, PB, nm);
        memcpy(co, p + (i + 1) * nx, sizeof(double) * nx);
        mul_v(nx, nx, Pn, nx, b + i * nx, co);
        memcpy(Pi, Qxx + i * xx, sizeof(double) * xx);
        mul_tn(nx, nx, nx, Ai, nx, PA, nx, Pi, nx);
        memcpy(pi, lx + i * nx, sizeof(double) * nx);
        mul_tv(nx, nx, Ai, nx, co, pi);
        if (m > 0) {
            for (int r = 0; r < m; ++r) memcpy(G + r * nm, Quu + i * mm + r * nm, sizeof(double) * m);
            mul_tn(m, m, nx, Bi, nm, PB, nm, G, nm);
            for (int r = 0; r < nx; ++r) memcpy(H + r * nm, Qxu + i * xm + r * nm, sizeof(double) * m);
            mul_tn(nx, m, nx, Ai, nx, PB, nm, H, nm);
            if (!cholesky(m, G, nm)) {
                free(PA);
                return i + 1;
            }
            /* [K k] = -G^-1 [H^T, lu + B^T co] */
            for (int r = 0; r < m; ++r) {
                for (int j = 0; j < nx; ++j) rhs[r * (nx + 1) + j] = H[j * nm + r];
                rhs[r * (nx + 1) + nx] = lu[i * nm + r];
            }
            for (int r = 0; r < nx; ++r)
                for (int j = 0; j < m; ++j) rhs[j * (nx + 1) + nx] += Bi[r * nm + j] * co[r];
            negative_solve(m, nx + 1, G, nm, rhs, nx + 1);
            for (int r = 0; r < m; ++r) {
                memcpy(Ki + r * nx, rhs + r * (nx + 1), sizeof(double) * nx);
                ki[r] = rhs[r * (nx + 1) + nx];
            }
            mul_nn(nx, nx, m, H, nm, Ki, nx, Pi, nx, 1);
            mul_v(nx, m, H, nm, ki, pi);
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
        memcpy(dui, k + i * nm, sizeof(double) * m);
        mul_v(m, nx, K + i * nm * nx, nx, dx + i * nx, dui);
        memcpy(next, b + i * nx, sizeof(double) * nx);
        mul_v(nx, nx, A + i * xx, nx, dx + i * nx, next);
        mul_v(nx, m, B + i * xm, nm, dui, next);
    }
    for (int i = 0; i <= N; ++i) {
        memcpy(lam + i * nx, p + i * nx, sizeof(double) * nx);
        mul_v(nx, nx, P + i * xx, nx, dx + i * nx, lam + i * nx);
    }
    free(PA);
    return 0;
}
