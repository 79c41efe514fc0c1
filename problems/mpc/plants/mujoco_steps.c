/* The MuJoCo plant's steps between two MPC updates (problems/mpc/plants/mujoco_plant.py,
 * MujocoPlant.run), compiled: the same operations as a step of the closed loop in Python.
 *
 * Per step j, at time (first + j) dt, from the measured state (q, v, tau): the compiled policy
 * (steps.h), the command u; the actuators' controls u + bias (+ noise[j] when noise is not NULL); mj_step;
 * the state in liftoff's coordinates (mujoco_model.py's MujocoRobot.from_mujoco: the joints
 * gathered by index, the free joint's quaternion (w, x, y, z) stored (x, y, z, w) and its linear
 * velocity turned to the body frame, R^T v summed row by row as numpy does); the actuators'
 * torques with a filter (their activations); the contact readings (mujoco_readings.c, called by
 * address). Outputs, row j: q, v, tau, u, the readings (n, 11) and the seconds of the policy and
 * of the plant (the controls, the step and the measurement).
 *
 * The loop stops after a step whose state has diverged (steps.h), and says so in
 * *diverged_at_end. Returns the number of steps done, or -(j + 1) if the policy's kernel failed at step j.
 *
 * MuJoCo's functions come as addresses (liftoff_set_mujoco), the library that the Python
 * bindings loaded; mjModel and mjData are those of its headers (liftoff_mujoco_version).
 */
#include <mujoco/mujoco.h>

#include "steps.h"

typedef void step_t(const mjModel *, mjData *);
typedef void quat2mat_t(mjtNum *, const mjtNum *);
typedef void readings_t(const mjModel *, mjData *, int, const int *, const int *, const unsigned char *, const int *,
                        const double *, double *);

static step_t *step;
static quat2mat_t *quat2mat;

/* mj_step and mju_quat2Mat. */
void liftoff_set_mujoco(void **functions) {
    step = (step_t *)functions[0];
    quat2mat = (quat2mat_t *)functions[1];
}

/* The version of the headers this library was compiled with. */
int liftoff_mujoco_version(void) { return mjVERSION_HEADER; }

/* The robot in MuJoCo: liftoff's coordinates of qpos and qvel by index, the actuators' controls
 * and activations. */
typedef struct {
    int nq, nv, ntau, nu, free;
    const long *qpos_index, *dof_index, *actuators, *activations;
} robot_t;

/* The contact readings: mujoco_readings.c's function and its arguments. */
typedef struct {
    readings_t *call;
    int n;
    const int *first, *names;
    const unsigned char *surface;
    const int *body;
    const double *offset;
} readings_args_t;

/* liftoff's state of MuJoCo's after a step into q, v and tau. */
static void measure(const mjModel *m, const mjData *d, const robot_t *r, double *q, double *v, double *tau) {
    for (int i = 0; i < r->nq; ++i) q[i] = d->qpos[r->qpos_index[i]];
    for (int i = 0; i < r->nv; ++i) v[i] = d->qvel[r->dof_index[i]];
    for (int i = 0; i < r->ntau; ++i) tau[i] = d->act[r->activations[i]];
    if (!r->free) return;
    const double *quat = d->qpos + 3, *w = d->qvel;
    double R[9];
    q[3] = quat[1], q[4] = quat[2], q[5] = quat[3], q[6] = quat[0];
    quat2mat(R, quat);
    for (int i = 0; i < 3; ++i) v[i] = R[i] * w[0] + R[3 + i] * w[1] + R[6 + i] * w[2];
}

int liftoff_mujoco_steps(const mjModel *m, mjData *d, const robot_t *r, const readings_args_t *g, const policy_t *p,
                         long first, double dt, int steps, const double *q0, const double *v0, const double *tau0,
                         const double *bias, const double *noise, const double *lower, const double *upper, double *q,
                         double *v, double *tau, double *u, double *readings, double *times, int *diverged_at_end) {
    const int nq = r->nq, nv = r->nv, nt = r->ntau, nu = r->nu, rows = 11 * g->n;
    const double *out = p->u;
    *diverged_at_end = 0;
    for (int j = 0; j < steps; ++j) {
        const double *qj = j ? q + (j - 1) * nq : q0, *vj = j ? v + (j - 1) * nv : v0;
        const double *tj = j ? tau + (j - 1) * nt : tau0;
        const double begin = seconds();
        if (policy(p, (double)(first + j) * dt, qj, nq, vj, nv, tj, nt)) return -(j + 1);
        const double middle = seconds();
        memcpy(u + j * nu, out, sizeof(double) * nu);
        for (int i = 0; i < nu; ++i) {
            double c = out[i] + bias[i];
            if (noise) c = c + noise[j * nu + i];
            d->ctrl[r->actuators[i]] = c;
        }
        step(m, d);
        measure(m, d, r, q + j * nq, v + j * nv, tau + j * nt);
        g->call(m, d, g->n, g->first, g->names, g->surface, g->body, g->offset, readings + j * rows);
        times[2 * j] = middle - begin;
        times[2 * j + 1] = seconds() - middle;
        if (diverged(nq, nv, lower, upper, q + j * nq, v + j * nv)) {
            *diverged_at_end = 1;
            return j + 1;
        }
    }
    return steps;
}
