/* liftoff's idealized legged plant's steps between two MPC updates (ideal_legged.py,
 * IdealLeggedPlant.run), compiled: the operations of IdealLeggedPlant.step in the same order.
 *
 * Per step j, at time t = (first + j) dt, from the state (q, v): the compiled policy (steps.h),
 * the command u; the actuated joints' torques u + bias (+ noise[j] when noise is not NULL) on
 * their rows of the joint torques, the others zero (the actuation a selection of joints, no joint
 * damping or friction, no push: what IdealPlant.torque then computes); the feet the schedule does not hold at t
 * (released, row j) leave the ground; the step kernel (ideal_kernel.py's StepKernel, its input
 * x = (q, v, torque, h, active, targets), its outputs q+, v+, a, f, converged, R, p, velocity)
 * with the stance feet at their touchdown points, again without the foot of the most negative
 * normal force while one pulls; the state, and each foot's reading (problems/mpc/plants:
 * touching, force, position, depth, velocity: a swinging foot's force and velocity zero).
 *
 * A step whose proximal steps miss the tolerance (the numpy reference takes it), or in which a
 * swinging foot that the schedule holds at t + dt (held, row j) goes below the ground (a
 * touchdown: the step is cut at the event), is not taken: the loop returns with *status 2, and
 * the plant takes that step in Python. The loop stops after a step whose state diverged
 * (*status 1). Returns the number of steps done (*status 0: all of them), or -(j + 1) if the
 * policy's kernel failed at step j.
 */
#include "steps.h"

/* The plant: its step kernel, the kernel's input row and outputs, the sizes (configuration,
 * velocity, actuated joints, feet), the velocity row of each actuated joint, the ground's height. */
typedef struct {
    batch_t *kernel;
    double *x;
    double **out;
    int nq, nv, nu, k;
    const long *actuated;
    double ground;
} legged_t;

enum { Q, V, A, F, CONVERGED, R, P, VELOCITY };

/* The step kernel with the feet of stance (their points in points) released one by one while one
 * pulls (of equal forces, the first); 0, or 2 for a step that Python takes: the proximal steps miss
 * the tolerance, or the kernel failed. */
static int dynamics(const legged_t *r, const double *q, const double *v, const double *torque, double h,
                    unsigned char *stance, const double *points) {
    const int nq = r->nq, nv = r->nv, k = r->k;
    double *x = r->x, *active = x + nq + 2 * nv + 1, *targets = active + k;
    memcpy(x, q, sizeof(double) * nq);
    memcpy(x + nq, v, sizeof(double) * nv);
    memcpy(x + nq + nv, torque, sizeof(double) * nv);
    x[nq + 2 * nv] = h;
    for (;;) {
        for (int i = 0; i < k; ++i) {
            active[i] = stance[i] ? 1.0 : 0.0;
            if (stance[i]) memcpy(targets + 3 * i, points + 3 * i, sizeof(double) * 3);
        }
        if (r->kernel(1, x, r->out) || r->out[CONVERGED][0] == 0.0) return 2;
        int pulling = -1;
        for (int i = 0; i < k; ++i)
            if (stance[i] && (pulling < 0 || r->out[F][3 * i + 2] < r->out[F][3 * pulling + 2])) pulling = i;
        if (pulling < 0 || r->out[F][3 * pulling + 2] >= 0.0) return 0;
        stance[pulling] = 0;
    }
}

int liftoff_legged_steps(const legged_t *r, const policy_t *p, long first, double dt, int steps, const double *q0,
                         const double *v0, const double *bias, const double *noise, const unsigned char *released,
                         const unsigned char *held, unsigned char *stance, const double *points, const double *lower,
                         const double *upper, double *q, double *v, double *u, double *readings, double *times,
                         int *status) {
    const int nq = r->nq, nv = r->nv, nu = r->nu, k = r->k;
    double tau[nu > 0 ? nu : 1], torque[nv];
    unsigned char feet[k > 0 ? k : 1];
    *status = 0;
    for (int j = 0; j < steps; ++j) {
        const double *qj = j ? q + (j - 1) * nq : q0, *vj = j ? v + (j - 1) * nv : v0;
        const double t = (double)(first + j) * dt;
        const double begin = seconds();
        if (policy(p, t, qj, nq, vj, nv, NULL, 0)) return -(j + 1);
        const double middle = seconds();
        for (int i = 0; i < nu; ++i) {
            double c = p->u[i] + bias[i];
            if (noise) c = c + noise[j * nu + i];
            tau[i] = c;
        }
        memset(torque, 0, sizeof(double) * nv);
        for (int i = 0; i < nu; ++i) torque[r->actuated[i]] = tau[i];
        for (int i = 0; i < k; ++i) feet[i] = stance[i] && !released[j * k + i];
        *status = dynamics(r, qj, vj, torque, dt, feet, points);
        const double *position = r->out[P];
        for (int i = 0; i < k && !*status; ++i)
            if (!feet[i] && held[j * k + i] && position[3 * i + 2] - r->ground < 0.0) *status = 2;
        if (*status) return j;
        memcpy(u + j * nu, p->u, sizeof(double) * nu);
        memcpy(q + j * nq, r->out[Q], sizeof(double) * nq);
        memcpy(v + j * nv, r->out[V], sizeof(double) * nv);
        memcpy(stance, feet, k);
        for (int i = 0; i < k; ++i) {
            double *row = readings + (j * k + i) * 11, depth = r->ground - position[3 * i + 2];
            memset(row, 0, sizeof(double) * 11);
            row[0] = feet[i] ? 1.0 : 0.0;
            if (feet[i]) memcpy(row + 1, r->out[F] + 3 * i, sizeof(double) * 3);
            memcpy(row + 4, position + 3 * i, sizeof(double) * 3);
            row[7] = depth > 0.0 || isnan(depth) ? depth : 0.0;
            if (feet[i]) memcpy(row + 8, r->out[VELOCITY] + 3 * i, sizeof(double) * 3);
        }
        times[2 * j] = middle - begin;
        times[2 * j + 1] = seconds() - middle;
        if (diverged(nq, nv, lower, upper, q + j * nq, v + j * nv)) {
            *status = 1;
            return j + 1;
        }
    }
    return steps;
}
