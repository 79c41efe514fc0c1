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
 * Returns 0; -1 when a step could not allocate its workspace; -2 when the kernel failed; s + 1
 * when the local equalities are singular (Cw) at stage s, the interior-point terms made.
 * seconds: the kernel's wall time.
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

int liftoff_linearize_group(const group_t *g, const int *knots, const double *q, const double *v, const double *tau,
                            const double *u, const double *w, const double *s, const double *z, double eps,
                            const double *beta, const double *lam, double *r_p, double *r_c, double *gc, double *st,
                            double *norms, double *LU, int *piv, double *T, double *t, const int *rows, int nm,
                            double *const *lqr, double *seconds) {
    struct timespec begin, end;
    gather(g, knots, q, v, tau, u, w, lam);
    clock_gettime(CLOCK_MONOTONIC, &begin);
    const int failed = g->kernel(g->S, g->x, g->outputs);
    clock_gettime(CLOCK_MONOTONIC, &end);
    *seconds = (double)(end.tv_sec - begin.tv_sec) + 1e-9 * (double)(end.tv_nsec - begin.tv_nsec);
    if (failed) return -2;
    g->scatter(g->S, g->blocks, g->nnz, g->size, g->count, g->src, g->dst, g->src_index, g->dst_index);
    if (g->interior(g->S, g->ny, g->nx, g->nw, g->ng, g->nb, g->bcol, g->bsign, g->nc, g->cols, g->g, g->G, s, z,
                    eps, g->gy, g->c, g->C, beta, g->b, g->A, g->lam, g->lam_next, g->H, r_p, r_c, gc, st, norms) < 0)
        return -1;
    return g->condense(g->S, g->nx, g->nu, g->nw, g->H, gc, g->C, g->c, g->A, g->b, g->nzw, g->zw, g->nww, g->ww,
                       g->nar, g->ar, g->nac, g->ac, LU, piv, T, t, rows, nm, lqr[0], lqr[1], lqr[2], lqr[3], lqr[4],
                       lqr[5], lqr[6], lqr[7]);
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
