/* A lifted group's linearization, and the expansion of its Newton step, each in one call
 * (ocp/group.py): the compiled steps that Python otherwise calls one after the other, on the
 * same arrays.
 *
 * Per stage r of the group (its knot k = knots[r]), the stage kernel's input row gets the knot's
 * q, v (and tau), the next knot's, the stage's u and w = (a, f), each force in its slot's column
 * (the other slots' columns stay zero, the constant inputs as they are); the costates lam of
 * knots k and k + 1 are gathered apart. Then the kernel (liftoff_batch of the kernel's library),
 * the scatter of its nonzeros into the group's blocks (liftoff_scatter, ocp/scatter.c), the
 * interior-point terms (liftoff_interior, ocp/interior.c) and the condensing into the LQR
 * (liftoff_condense, ocp/condensing.c) run on them, each called by its address.
 *
 * With a curvature (an exact Hessian's: ocp/kernels.py's CompiledStages.curvature), the steps
 * after the scatter read H = H_kernel + curvature, H_kernel the block the scatter writes; the
 * curvature is the one kept from an earlier call, or, fresh, computed first by its kernel at the
 * gathered row, beta and the next costate.
 *
 * Returns 0; -1 when a step could not allocate its workspace; -2 when a kernel failed; s + 1
 * when the local equalities are singular (Cw) at stage s, the interior-point terms made.
 * seconds: the kernels' wall time.
 *
 * The expansion gathers the stages' rows y = (dx, du) of the Riccati recursion's solution (dx
 * of knot k, the first nu of the nm controls of stage k) and its costates of knots k + 1, then
 * runs liftoff_expand (dw, beta; ocp/condensing.c) and, with inequalities, liftoff_interior_expand
 * (ds, dz and the fraction-to-boundary steps; ocp/interior.c), by their addresses.
 */
#include <string.h>
#include <time.h>

typedef int batch_t(long, const double *, double **);
typedef void scatter_t(int, int, const int *, const int *, const int *, const double *const *, double *const *,
                       const int *, const int *);
typedef int interior_t(int, int, int, int, int, int, const int *, const double *, int, const int *, const double *,
                       const double *, const double *, const double *, double, const double *, const double *,
                       const double *, const double *, const double *, const double *, const double *,
                       const double *, double *, double *, double *, double *, double *, double *);
typedef void expand_t(int, int, int, int, const double *, const double *, const double *, const double *,
                      const int *, const double *, const double *, const double *, const double *, double *, double *);
typedef void interior_expand_t(int, int, int, int, int, const int *, const double *, int, const int *,
                               const double *, const double *, const double *, const double *, const double *,
                               const double *, const double *, double, double *, double *, double *);
typedef int condense_t(int, int, int, int, const double *, const double *, const double *, const double *,
                       const double *, const double *, int, const int *, int, const int *, int, const int *, int,
                       const int *, double *, int *, double *, double *, const int *, int, double *, double *,
                       double *, double *, double *, double *, double *, double *);

/* What one group workspace's calls take, made once per workspace (ocp/group.py, GroupLinearization). */
typedef struct {
    int S, n_in;                                     /* stages, the kernel's input columns */
    int nq, nv, nu, ntau, m;                         /* sizes of q, v, u, tau, the group's forces */
    int q, v, a, u, q_next, v_next, tau, tau_next;  /* their first input columns */
    const int *f;                                    /* the input column of each force */
    double *x;
    batch_t *kernel;
    double **outputs;
    scatter_t *scatter;
    int blocks;
    const int *nnz, *size, *count, *src_index, *dst_index;
    const double *const *src;
    double *const *dst;
    interior_t *interior;
    int ny, nx, nw, ng, nb, nc;
    const int *bcol, *cols;
    const double *bsign, *g, *G, *gy, *c, *C, *b, *A;
    double *H, *lam, *lam_next;
    condense_t *condense;
    int nzw, nww, nar, nac;
    const int *zw, *ww, *ar, *ac;
    expand_t *expand;
    interior_expand_t *interior_expand;
    double *curvature;       /* or NULL: an exact Hessian's (S, ny, ny), H = H_kernel + curvature */
    const double *H_kernel;
    batch_t *curvature_kernel; /* or NULL: the kernel of a fresh curvature, its input rows and output */
    int curvature_n;
    double *curvature_x, **curvature_out;
    int curvature_nnz, curvature_width; /* the output's entries that are the curvature's, its row size */
    const int *curvature_src, *curvature_dst, *curvature_f; /* where they go; each force's input column */
} group_t;

static void gather(const group_t *g, const int *knots, const double *q, const double *v, const double *tau,
                   const double *u, const double *w, const double *lam) {
    const int nw = g->nv + g->m;
    for (int r = 0; r < g->S; ++r) {
        const long k = knots[r];
        double *row = g->x + (size_t)r * g->n_in;
        const double *wr = w + (size_t)r * nw;
        memcpy(row + g->q, q + k * g->nq, sizeof(double) * g->nq);
        memcpy(row + g->v, v + k * g->nv, sizeof(double) * g->nv);
        memcpy(row + g->a, wr, sizeof(double) * g->nv);
        for (int j = 0; j < g->m; ++j) row[g->f[j]] = wr[g->nv + j];
        if (g->nu) memcpy(row + g->u, u + (size_t)r * g->nu, sizeof(double) * g->nu);
        memcpy(row + g->q_next, q + (k + 1) * g->nq, sizeof(double) * g->nq);
        memcpy(row + g->v_next, v + (k + 1) * g->nv, sizeof(double) * g->nv);
        if (g->ntau) {
            memcpy(row + g->tau, tau + k * g->ntau, sizeof(double) * g->ntau);
            memcpy(row + g->tau_next, tau + (k + 1) * g->ntau, sizeof(double) * g->ntau);
        }
        memcpy(g->lam + (size_t)r * g->nx, lam + k * g->nx, sizeof(double) * g->nx);
        memcpy(g->lam_next + (size_t)r * g->nx, lam + (k + 1) * g->nx, sizeof(double) * g->nx);
    }
}

/* The wall time of kernel(S, x, outputs) added to *seconds; its status. */
static int timed(batch_t *kernel, int S, const double *x, double **outputs, double *seconds) {
    struct timespec begin, end;
    clock_gettime(CLOCK_MONOTONIC, &begin);
    const int failed = kernel(S, x, outputs);
    clock_gettime(CLOCK_MONOTONIC, &end);
    *seconds += (double)(end.tv_sec - begin.tv_sec) + 1e-9 * (double)(end.tv_nsec - begin.tv_nsec);
    return failed;
}

/* A fresh curvature (ocp/kernels.py's CompiledStages.curvature): the curvature kernel's input rows
   (the stage kernel's, the multipliers beta of the local equalities, each force's in its slot's
   column and the other slots' zero, the velocity rows of the next costate), the kernel, and its
   nonzeros written into the dense curvature. Its status. */
static int fresh_curvature(const group_t *g, const double *beta, double *seconds) {
    const int S = g->S, n = g->n_in, nv = g->nv, nw = g->nv + g->m, nc = g->curvature_n;
    for (int r = 0; r < S; ++r) {
        double *row = g->curvature_x + (size_t)r * nc;
        const double *br = beta + (size_t)r * nw;
        memcpy(row, g->x + (size_t)r * n, sizeof(double) * n);
        memcpy(row + n, br, sizeof(double) * nv);
        memset(row + n + nv, 0, sizeof(double) * (nc - n - 2 * nv));
        for (int j = 0; j < g->m; ++j) row[g->curvature_f[j]] = br[nv + j];
        memcpy(row + nc - nv, g->lam_next + (size_t)r * g->nx, sizeof(double) * nv);
    }
    if (timed(g->curvature_kernel, S, g->curvature_x, g->curvature_out, seconds)) return 1;
    const size_t block = (size_t)g->ny * g->ny;
    memset(g->curvature, 0, sizeof(double) * S * block);
    for (int r = 0; r < S; ++r) {
        const double *out = g->curvature_out[0] + (size_t)r * g->curvature_width;
        double *c = g->curvature + r * block;
        for (int e = 0; e < g->curvature_nnz; ++e) c[g->curvature_dst[e]] = out[g->curvature_src[e]];
    }
    return 0;
}

/* The group's stage kernel on its rows of the iterate (gather()): its wall time into *seconds;
   0, or -2 where it failed. */
static int evaluate(const group_t *g, const int *knots, const double *q, const double *v, const double *tau,
                    const double *u, const double *w, const double *lam, double *seconds) {
    gather(g, knots, q, v, tau, u, w, lam);
    *seconds = 0.0;
    return timed(g->kernel, g->S, g->x, g->outputs, seconds) ? -2 : 0;
}

/* The rest of the group's linearization after evaluate(): the scatter, the curvature, the
   interior-point terms and the condensing; the kernels' status as liftoff_linearize_group's. */
static int finish(const group_t *g, const double *s, const double *z, double eps, const double *beta, double *r_p,
                  double *r_c, double *gc, double *st, double *norms, double *LU, int *piv, double *T, double *t,
                  const int *rows, int nm, double *const *lqr, int fresh, double *seconds) {
    g->scatter(g->S, g->blocks, g->nnz, g->size, g->count, g->src, g->dst, g->src_index, g->dst_index);
    if (fresh && g->curvature_kernel && fresh_curvature(g, beta, seconds)) return -2;
    if (g->curvature)
        for (long i = 0, n = (long)g->S * g->ny * g->ny; i < n; ++i) g->H[i] = g->H_kernel[i] + g->curvature[i];
    if (g->interior(g->S, g->ny, g->nx, g->nw, g->ng, g->nb, g->bcol, g->bsign, g->nc, g->cols, g->g, g->G, s, z,
                    eps, g->gy, g->c, g->C, beta, g->b, g->A, g->lam, g->lam_next, g->H, r_p, r_c, gc, st, norms) < 0)
        return -1;
    return g->condense(g->S, g->nx, g->nu, g->nw, g->H, gc, g->C, g->c, g->A, g->b, g->nzw, g->zw, g->nww, g->ww,
                       g->nar, g->ar, g->nac, g->ac, LU, piv, T, t, rows, nm, lqr[0], lqr[1], lqr[2], lqr[3], lqr[4],
                       lqr[5], lqr[6], lqr[7]);
}

int liftoff_linearize_group(const group_t *g, const int *knots, const double *q, const double *v, const double *tau,
                            const double *u, const double *w, const double *s, const double *z, double eps,
                            const double *beta, const double *lam, double *r_p, double *r_c, double *gc, double *st,
                            double *norms, double *LU, int *piv, double *T, double *t, const int *rows, int nm,
                            double *const *lqr, int fresh, double *seconds) {
    const int status = evaluate(g, knots, q, v, tau, u, w, lam, seconds);
    return status ? status
                  : finish(g, s, z, eps, beta, r_p, r_c, gc, st, norms, LU, piv, T, t, rows, nm, lqr, fresh, seconds);
}

void liftoff_expand_group(const group_t *g, const int *knots, const double *dx, const double *controls, int nm,
                          const double *lam, const double *gc, const double *LU, const int *piv, const double *T,
                          const double *t, const double *s, const double *z, const double *r_p, const double *r_c,
                          double tau, double *y, double *dw, double *beta, double *ds, double *dz, double *steps) {
    const int nz = g->nx + g->nu;
    for (int r = 0; r < g->S; ++r) {
        const long k = knots[r];
        memcpy(y + (size_t)r * nz, dx + k * g->nx, sizeof(double) * g->nx);
        memcpy(y + (size_t)r * nz + g->nx, controls + k * nm, sizeof(double) * g->nu);
        memcpy(g->lam_next + (size_t)r * g->nx, lam + (k + 1) * g->nx, sizeof(double) * g->nx);
    }
    g->expand(g->S, g->nx, g->nu, g->nw, g->H, gc, g->A, LU, piv, T, t, y, g->lam_next, dw, beta);
    if (g->ng + g->nb)
        g->interior_expand(g->S, g->ny, nz, g->ng, g->nb, g->bcol, g->bsign, g->nc, g->cols, g->G, y, dw, s, z, r_p,
                           r_c, tau, ds, dz, steps);
    else
        steps[0] = steps[1] = 1.0;
}


/* A horizon of groups (ocp/horizon.py): every group's linearization, the terminal cost and the
 * initial state's residual in one call; every group's expansion and the step in another. They
 * run the functions above, the terminal kernel and manifold.c's by their addresses. The sums
 * are numpy's (its pairwise summation) and no product is contracted into a fused multiply-add,
 * so the results are those of ocp/formulation.py's steps, bitwise. */
#include <math.h>

#pragma GCC optimize("fp-contract=off")
#pragma STDC FP_CONTRACT OFF

typedef void manifold_t(int, int, int, const int *, const double *, const double *, double *);

/* The offsets of a horizon's arrays in the blocks of its calls: per group (desc), its outputs in
 * the linearization's block (D_RP ... D_SECONDS) and int block (D_PIV), in the step's block
 * (D_Y ... D_Z), and its number of inequalities; the linearization's own (L_A ... L_SCRATCH, L_NU
 * in the int block) and the step's (S_Q ... S_ALPHA). */
enum { D_RP, D_RC, D_GC, D_ST, D_NORMS, D_LU, D_T, D_TT, D_SECONDS, D_PIV, D_Y, D_DW, D_BETA, D_DS, D_DZ, D_STEPS,
       D_U, D_W, D_BETA1, D_S, D_Z, D_NI, DESC };
enum { L_A, L_B, L_BB, L_QXX, L_QXU, L_QUU, L_LX, L_LU, L_HT, L_GT, L_COSTT, L_DX0, L_SCALARS, L_SCRATCH, L_NU, LIN };
enum { S_Q, S_V, S_TAU, S_LAM, S_DQ, S_ALPHA, STEP };

typedef struct {
    int G, K, nq, nv, ntau, nx, nm;
    const group_t *const *groups;
    const int *desc;  /* DESC ints per group */
    const int *at;    /* LIN offsets, then STEP offsets */
    batch_t *terminal;
    int terminal_n;   /* the terminal kernel's input columns */
    double *terminal_x;
    manifold_t *integrate, *difference;
    const int *layout;
    const double *terminal_curvature; /* or NULL: added to the terminal cost's H (an exact Hessian's) */
    int fresh;                        /* the groups' curvatures computed (an exact Hessian's, fresh) */
} horizon_t;

/* numpy's sum of n contiguous doubles: pairwise, eight accumulators over blocks of up to 128 */
static double pairwise(const double *a, long n) {
    if (n < 8) {
        double res = 0.0;
        for (long i = 0; i < n; ++i) res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8], res;
        long i;
        for (int j = 0; j < 8; ++j) r[j] = a[j];
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; ++j) r[j] += a[i + j];
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i) res += a[i];
        return res;
    }
    long half = n / 2;
    half -= half % 8;
    return pairwise(a, half) + pairwise(a + half, n - half);
}

/* knots: each group's knots. x: q, v, tau, lam of every knot, the OCP's q0, v0, tau0, the terminal
 * kernel's constant inputs, then per group u, w, beta, s, z. out: the linearization's block (the LQR, the terminal cost's
 * H, g and value, dx0, the scalars: KKT error, cost, largest violation, l1 norm of the equality
 * residuals, sum of log s, the stage and terminal kernels' wall time) with the groups'; ints:
 * the LQR's nu and the groups' pivots. Returns 0; -1 or -2 as a group's linearization; 1 where
 * Python's steps are to run instead (Cw singular at a stage, a value not finite). */
int liftoff_linearize_horizon(const horizon_t *h, const int *const *knots_of, const double *const *x, double eps,
                              double *out, int *ints) {
    const int *at = h->at, K = h->K, nx = h->nx, nm = h->nm, nq = h->nq, nv = h->nv, ntau = h->ntau;
    const double *q = x[0], *v = x[1], *tau = x[2], *lam = x[3];
    double *lqr[8], *scratch = out + at[L_SCRATCH];
    for (int i = 0; i < 8; ++i) lqr[i] = out + at[L_A + i];
    memset(lqr[1], 0, sizeof(double) * K * nx * nm); /* the control blocks: a stage writes its nu columns */
    memset(lqr[4], 0, sizeof(double) * K * nx * nm);
    memset(lqr[5], 0, sizeof(double) * K * nm * nm);
    memset(lqr[7], 0, sizeof(double) * K * nm);
    int *nu = ints + at[L_NU];
    double squares = 0.0, cost = 0.0, violation = 0.0, l1 = 0.0, log_slacks = 0.0, seconds = 0.0;
    /* the stage kernels first, the groups of one kernel one after the other: a kernel is hundreds
       of kilobytes of straight-line code, read from memory again when other code ran in between
       (the groups' workspaces are distinct: ocp/horizon.py's Structure) */
    for (int i = 0; i < h->G; ++i) {
        int first = 1;
        for (int j = 0; j < i && first; ++j) first = h->groups[j]->kernel != h->groups[i]->kernel;
        for (int j = i; j < h->G && first; ++j) {
            const group_t *g = h->groups[j];
            if (g->kernel != h->groups[i]->kernel) continue;
            const double *const *gv = x + 8 + 5 * j; /* u, w, beta, s, z */
            if (evaluate(g, knots_of[j], q, v, tau, gv[0], gv[1], lam, out + h->desc[j * DESC + D_SECONDS]))
                return -2;
        }
    }
    for (int i = 0; i < h->G; ++i) {
        const group_t *g = h->groups[i];
        const int *d = h->desc + i * DESC, *knots = knots_of[i];
        const double *const *gv = x + 8 + 5 * i; /* u, w, beta, s, z */
        const int status = finish(g, gv[3], gv[4], eps, gv[2], out + d[D_RP], out + d[D_RC], out + d[D_GC],
                                  out + d[D_ST], out + d[D_NORMS], out + d[D_LU], ints + d[D_PIV], out + d[D_T],
                                  out + d[D_TT], knots, nm, lqr, h->fresh, out + d[D_SECONDS]);
        if (status) return status < 0 ? status : 1;
        for (int r = 0; r < g->S; ++r) nu[knots[r]] = g->nu;
        const double *norms = out + d[D_NORMS];
        const long n = (long)g->S * d[D_NI];
        squares += norms[0];
        cost += pairwise(g->dst[0], g->S);
        if (norms[1] > violation) violation = norms[1];
        l1 += norms[2];
        for (long k = 0; k < n; ++k) scratch[k] = log(gv[3][k]);
        log_slacks += pairwise(scratch, n);
        seconds += out[d[D_SECONDS]];
    }
    double *tx = h->terminal_x, *dx0 = out + at[L_DX0];
    memcpy(tx, q + (size_t)K * nq, sizeof(double) * nq);
    memcpy(tx + nq, v + (size_t)K * nv, sizeof(double) * nv);
    memcpy(tx + nq + nv, tau + (size_t)K * ntau, sizeof(double) * ntau);
    memcpy(tx + nq + nv + ntau, x[7], sizeof(double) * (h->terminal_n - nq - nv - ntau));
    double *terminal[3] = {out + at[L_COSTT], out + at[L_GT], out + at[L_HT]};
    if (timed(h->terminal, 1, tx, terminal, &seconds)) return -2;
    if (h->terminal_curvature)
        for (int j = 0; j < nx * nx; ++j) terminal[2][j] += h->terminal_curvature[j];
    cost += terminal[0][0];
    h->difference(1, nq, nv, h->layout, q, x[4], dx0);
    for (int j = 0; j < nv; ++j) dx0[nv + j] = x[5][j] - v[j];
    for (int j = 0; j < ntau; ++j) dx0[2 * nv + j] = x[6][j] - tau[j];
    for (int j = 0; j < nx; ++j) {
        const double e = terminal[1][j] - lam[(size_t)K * nx + j];
        scratch[j] = e * e;
    }
    const double stationarity = pairwise(scratch, nx);
    double largest = fabs(dx0[0]);
    for (int j = 0; j < nx; ++j) {
        scratch[j] = dx0[j] * dx0[j];
        if (fabs(dx0[j]) > largest) largest = fabs(dx0[j]);
    }
    squares += stationarity + pairwise(scratch, nx);
    if (largest > violation) violation = largest;
    for (int j = 0; j < nx; ++j) scratch[j] = fabs(dx0[j]);
    l1 += pairwise(scratch, nx);
    if (!isfinite(squares + cost)) return 1;
    double *scalars = out + at[L_SCALARS];
    scalars[0] = sqrt(squares), scalars[1] = cost, scalars[2] = violation, scalars[3] = l1;
    scalars[4] = log_slacks, scalars[5] = seconds;
    return 0;
}

/* knots, x: as liftoff_linearize_horizon's; lin, ints: its blocks; dx, controls, lam: the Riccati
 * recursion's solution; fraction: the fraction-to-boundary rule's. out: the step's block (the
 * stepped q, v, tau, lam, a scratch for the configurations' step, the step sizes alpha_p, alpha_d)
 * with the groups' (their expansion y, dw, beta, ds, dz and steps; their stepped u, w, beta, s, z). */
void liftoff_step_horizon(const horizon_t *h, const int *const *knots, const double *const *x, const double *lin,
                          const int *ints, const double *dx, const double *controls, const double *lam, double fraction,
                          double *out) {
    const int *at = h->at + LIN, K1 = h->K + 1, nx = h->nx, nv = h->nv, ntau = h->ntau;
    double ap = 1.0, ad = 1.0;
    for (int i = 0; i < h->G; ++i) {
        const int *d = h->desc + i * DESC;
        const double *const *gv = x + 8 + 5 * i;
        liftoff_expand_group(h->groups[i], knots[i], dx, controls, h->nm, lam, lin + d[D_GC], lin + d[D_LU],
                             ints + d[D_PIV], lin + d[D_T], lin + d[D_TT], gv[3], gv[4], lin + d[D_RP],
                             lin + d[D_RC], fraction, out + d[D_Y], out + d[D_DW], out + d[D_BETA], out + d[D_DS],
                             out + d[D_DZ], out + d[D_STEPS]);
        const double *steps = out + d[D_STEPS];
        if (steps[0] < ap) ap = steps[0];
        if (steps[1] < ad) ad = steps[1];
    }
    out[at[S_ALPHA]] = ap, out[at[S_ALPHA] + 1] = ad;
    const double *q = x[0], *v = x[1], *tau = x[2], *lam0 = x[3];
    double *dq = out + at[S_DQ], *v1 = out + at[S_V], *tau1 = out + at[S_TAU], *lam1 = out + at[S_LAM];
    for (int k = 0; k < K1; ++k) {
        const double *dxk = dx + (size_t)k * nx;
        for (int j = 0; j < nv; ++j) {
            dq[k * nv + j] = ap * dxk[j];
            v1[k * nv + j] = v[k * nv + j] + ap * dxk[nv + j];
        }
        for (int j = 0; j < ntau; ++j) tau1[k * ntau + j] = tau[k * ntau + j] + ap * dxk[2 * nv + j];
    }
    h->integrate(K1, h->nq, nv, h->layout, q, dq, out + at[S_Q]);
    for (long j = 0; j < (long)K1 * nx; ++j) lam1[j] = lam0[j] + ad * (lam[j] - lam0[j]);
    for (int i = 0; i < h->G; ++i) {
        const group_t *g = h->groups[i];
        const int *d = h->desc + i * DESC;
        const double *const *gv = x + 8 + 5 * i; /* u, w, beta, s, z */
        const long S = g->S, nz = nx + g->nu, nw = S * g->nw, ni = S * d[D_NI];
        const double *y = out + d[D_Y], *dw = out + d[D_DW], *beta = out + d[D_BETA];
        const double *ds = out + d[D_DS], *dz = out + d[D_DZ];
        double *u1 = out + d[D_U], *w1 = out + d[D_W], *beta1 = out + d[D_BETA1], *s1 = out + d[D_S];
        double *z1 = out + d[D_Z];
        for (long r = 0; r < S; ++r)
            for (int j = 0; j < g->nu; ++j) u1[r * g->nu + j] = gv[0][r * g->nu + j] + ap * y[r * nz + nx + j];
        for (long j = 0; j < nw; ++j) {
            w1[j] = gv[1][j] + ap * dw[j];
            beta1[j] = gv[2][j] + ad * (beta[j] - gv[2][j]);
        }
        for (long j = 0; j < ni; ++j) {
            s1[j] = gv[3][j] + ap * ds[j];
            z1[j] = gv[4][j] + ad * dz[j];
        }
    }
}

typedef int riccati_t(int, int, int, const int *, const double *, const double *, const double *, const double *,
                      const double *, const double *, const double *, const double *, const double *, const double *,
                      const double *, double *, double *, double *, double *, double *, double *, double *);

/* A Newton step of the horizon in one call: liftoff_linearize_horizon into lin and ints, the
 * Riccati recursion of the LQR it wrote (riccati: solvers/riccati.c's liftoff_riccati, by its
 * address) into sol (its outputs P, p, K, k, dx, du, lam one after the other), and
 * liftoff_step_horizon from that solution into out. Returns liftoff_linearize_horizon's status
 * where it is not 0; 2 where the recursion finds the LQR not convex (the linearization made), -3
 * where it could not allocate its workspace; else 0. */
int liftoff_newton_horizon(const horizon_t *h, const int *const *knots, const double *const *x, double eps,
                           double *lin, int *ints, riccati_t *riccati, double *sol, double fraction, double *out) {
    int status = liftoff_linearize_horizon(h, knots, x, eps, lin, ints);
    if (status) return status;
    const int *at = h->at, K = h->K, nx = h->nx, nm = h->nm;
    double *P = sol, *p = P + (size_t)(K + 1) * nx * nx, *gains = p + (size_t)(K + 1) * nx;
    double *k = gains + (size_t)K * nm * nx, *dx = k + (size_t)K * nm, *du = dx + (size_t)(K + 1) * nx;
    double *lam = du + (size_t)K * nm;
    status = riccati(K, nx, nm, ints + at[L_NU], lin + at[L_A], lin + at[L_B], lin + at[L_BB], lin + at[L_QXX],
                     lin + at[L_QXU], lin + at[L_QUU], lin + at[L_LX], lin + at[L_LU], lin + at[L_HT], lin + at[L_GT],
                     lin + at[L_DX0], P, p, gains, k, dx, du, lam);
    if (status) return status < 0 ? -3 : 2;
    liftoff_step_horizon(h, knots, x, lin, ints, dx, du, lam, fraction, out);
    return 0;
}
