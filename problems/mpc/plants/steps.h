/* What the compiled plant steps share (mujoco_steps.c, ideal_steps.c): the compiled policy, the
 * clock, and the divergence test of the closed loop.
 *
 * The policy (problems/mpc/policy.py, CompiledPolicy.native): its kernel's batch function on its
 * input row x, whose first entry is the fraction s of its first stage, clipped to [0, 1], then
 * q, v and tau written in place, the plan after them; its output row, the command.
 *
 * The divergence test (loop.py's Divergence): a coordinate not finite or beyond its widened
 * limits lower, upper, a velocity not finite.
 */
#ifndef LIFTOFF_STEPS_H
#define LIFTOFF_STEPS_H

#include <math.h>
#include <string.h>
#include <time.h>

#pragma GCC optimize("fp-contract=off") /* products and sums rounded one by one, as numpy does */

typedef int batch_t(long, const double *, double **);

/* The compiled policy: its kernel's batch function, its input and output rows, where q, v and
 * tau start in the input, its start time and the inverse of its first stage's length. */
typedef struct {
    batch_t *batch;
    double *x, *u;
    long q_at, v_at, tau_at;
    double t0, rate;
} policy_t;

static double seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

/* The policy at time t and the state (q, v, tau) (nq, nv, nt entries): its command in p->u;
 * nonzero if its kernel failed. */
static int policy(const policy_t *p, double t, const double *q, int nq, const double *v, int nv, const double *tau,
                  int nt) {
    double *out = p->u;
    const double s = (t - p->t0) * p->rate;
    p->x[0] = s < 0.0 ? 0.0 : s > 1.0 ? 1.0 : s;
    memcpy(p->x + p->q_at, q, sizeof(double) * nq);
    memcpy(p->x + p->v_at, v, sizeof(double) * nv);
    if (nt) memcpy(p->x + p->tau_at, tau, sizeof(double) * nt);
    return p->batch(1, p->x, &out);
}

/* Whether the state (q, v) has diverged: beyond the widened limits lower, upper (nq). */
static int diverged(int nq, int nv, const double *lower, const double *upper, const double *q, const double *v) {
    for (int i = 0; i < nq; ++i)
        if (!(isfinite(q[i]) && q[i] >= lower[i] && q[i] <= upper[i])) return 1;
    for (int i = 0; i < nv; ++i)
        if (!isfinite(v[i])) return 1;
    return 0;
}

#endif
