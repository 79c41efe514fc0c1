/* The horizon's plan of a legged MPC (locomotion.py, GaitController._plan), compiled: the same
 * operations in the same order, so the same numbers to the bit (no product is contracted into a
 * fused multiply-add; cos and sin are the C library's, which Python's math and numpy call).
 *
 * From the schedule's knot and clock at the update's time t: the knots' times (the first t), the
 * command in force at each, the base's reference path (yaw and horizontal position integrated
 * from the reference yaw and the measured position), each foot's runs of stages over the N
 * stages (standing on its anchor or on a foothold it lands on, or swinging from where it lifted
 * off to its foothold), the swing references, the configuration, velocity and CoM references,
 * and the footholds of the feet in the air at the start (their targets). The measured velocity's
 * part, error = v_xy - R(yaw_ref) v_cmd, comes from the caller (numpy's products).
 *
 * The schedule's table of knots plays its first prefix knots once, then its cycle: waits[s][i][k]
 * is the number of knots from table knot k to the first at which foot i stands (s = 1) or is in
 * the air (s = 0), -1 if never.
 */
#include <math.h>
#include <string.h>

#pragma GCC optimize("fp-contract=off") /* products and sums rounded one by one, as Python does */

#define NEVER 1000000000L /* locomotion.py's NEVER */

/* What every plan of a controller shares (made once, locomotion.py's CompiledPlan). */
typedef struct {
    int N, F, M, L, prefix, cycle, commands, nq, nv, profile; /* profile: 0 parabola, 1 triangle */
    double dt, gain, max_step, vertical_landing, depth, height, com_height;
    const int *waits;                  /* (2, F, L) */
    const double *starts, *rows;       /* the commands' start times (commands,), their rows (commands, 3) */
    const double *hips, *q0;           /* (F, 2) under the hips in the heading frame; the standing q (nq,) */
    double *times, *yaw, *xy, *cmd;    /* workspace: (M,), (M,), (M, 2), (M, 3) */
} plan_t;

/* One foot as the controller runs it (locomotion.py's Foot): stance, anchor, change, lift, planned. */
typedef struct {
    double stance, anchor[3], change, lift, planned;
} foot_t;

/* The first knot from k on at which foot i stands (standing = 1) or is in the air (0). */
static long next_knot(const plan_t *p, int i, long k, int standing) {
    const long within = k < p->L ? k : p->prefix + (k - p->prefix) % p->cycle;
    const int wait = p->waits[((long)standing * p->F + i) * p->L + within];
    return wait < 0 ? NEVER : k + wait;
}

/* Where foot i lands at knot j of the horizon (GaitController._foothold) into out (3,). */
static void foothold(const plan_t *p, int i, long j, long knot, const double *error, double floor, double *out) {
    if (j > p->M - 1) j = p->M - 1;
    const double c = cos(p->yaw[j]), s = sin(p->yaw[j]);
    long stance = next_knot(p, i, knot + j, 0) - knot - j;
    if (stance > p->cycle) stance = p->cycle;
    const double *cmd = p->cmd + 3 * j;
    const double vx = cmd[0], vy = cmd[1], yaw_rate = cmd[2];
    const double x = p->hips[2 * i], y = p->hips[2 * i + 1];
    const double hx = c * x - s * y, hy = s * x + c * y;
    const double half = 0.5 * (double)stance * p->dt;
    double ox = half * (c * vx - s * vy - yaw_rate * hy) + p->gain * error[0];
    double oy = half * (s * vx + c * vy + yaw_rate * hx) + p->gain * error[1];
    const double reach = sqrt(ox * ox + oy * oy);
    if (reach > p->max_step) {
        ox = ox * p->max_step / reach;
        oy = oy * p->max_step / reach;
    }
    out[0] = p->xy[2 * j] + hx + ox;
    out[1] = p->xy[2 * j + 1] + hy + oy;
    out[2] = floor;
}

static double profile(const plan_t *p, double s) {
    return p->profile ? 1.0 - fabs(2.0 * s - 1.0) : 4.0 * s * (1.0 - s);
}

/* The swing reference at time tj of the swing from p_lift at lift to p_land at land (GaitController._swing). */
static void swing_at(const plan_t *p, const double *p_lift, const double *p_land, double lift, double land, double tj,
                     double *out) {
    const double span = land - lift;
    double s = (tj - lift) / (span > 1e-9 ? span : 1e-9);
    s = s < 0.0 ? 0.0 : s > 1.0 ? 1.0 : s;
    const double r = s / (1.0 - p->vertical_landing);
    const double b = 0.5 * (1.0 - cos(M_PI * (r < 1.0 ? r : 1.0)));
    for (int a = 0; a < 3; ++a) out[a] = p_lift[a] + b * (p_land[a] - p_lift[a]);
    out[2] = p_lift[2] + s * (p_land[2] - p->depth - p_lift[2]) + p->height * profile(p, s);
}

/* The base's path: knot times, commands, yaw and horizontal position at each knot (GaitController._base_path). */
static void base_path(const plan_t *p, double t, double clock, long knot, double yaw_ref, const double *q) {
    double *times = p->times, *yaw = p->yaw, *xy = p->xy, *cmd = p->cmd;
    for (int k = 0; k < p->M; ++k) {
        times[k] = k ? t + (double)(knot + k) * p->dt - clock : t;
        int c = 0;
        while (c + 1 < p->commands && p->starts[c + 1] <= times[k] + 1e-9) ++c;
        memcpy(cmd + 3 * k, p->rows + 3 * c, sizeof(double) * 3);
    }
    yaw[0] = yaw_ref;
    xy[0] = q[0], xy[1] = q[1];
    for (int k = 0; k + 1 < p->M; ++k) {
        const double step = times[k + 1] - times[k], c = cos(yaw[k]), s = sin(yaw[k]);
        const double vx = cmd[3 * k], vy = cmd[3 * k + 1];
        yaw[k + 1] = yaw[k] + step * cmd[3 * k + 2];
        xy[2 * (k + 1)] = xy[2 * k] + step * (c * vx - s * vy);
        xy[2 * (k + 1) + 1] = xy[2 * k + 1] + step * (s * vx + c * vy);
    }
}

/* The plan at time t (module docstring) into the zeroed outputs: dts (N,), stance and landing
 * (N, F) bytes, footholds and swing (N, F, 3), com (N, 3), q_ref (N + 1, nq), v_ref (N + 1, nv),
 * and the targets (F, 3) of the feet in the air at the start (the others' rows untouched). */
void liftoff_plan(const plan_t *p, const foot_t *feet, double t, double clock, long knot, double yaw_ref, double floor,
                  const double *q, const double *error, const double *com_now, double *dts, unsigned char *stance,
                  double *footholds, double *swing, unsigned char *landing, double *com, double *q_ref, double *v_ref,
                  double *targets) {
    const int N = p->N, F = p->F;
    base_path(p, t, clock, knot, yaw_ref, q);
    for (int i = 0; i < F; ++i) { /* GaitController._segments */
        const foot_t *st = feet + i;
        int standing = st->stance != 0.0;
        long change = (long)st->change;
        const double *anchor = st->anchor, *p_lift = st->anchor;
        double lift = st->lift, t_land = 0.0, target[3] = {0.0, 0.0, 0.0};
        if (!standing) {
            t_land = st->planned;
            foothold(p, i, change - knot, knot, error, floor, target);
            memcpy(targets + 3 * i, target, sizeof(target));
        }
        double land_at[3];
        for (int j = 0; j < N;) {
            const long k = knot + j;
            if (standing && k >= change) {
                standing = 0, lift = p->times[j], p_lift = anchor;
                change = next_knot(p, i, k, 1);
                t_land = t + (double)change * p->dt - clock;
                foothold(p, i, change - knot, knot, error, floor, target);
            } else if (!standing && k >= change) {
                standing = 1;
                memcpy(land_at, target, sizeof(target));
                anchor = land_at;
                change = next_knot(p, i, k, 0);
                landing[j * F + i] = 1;
            }
            long end = change - knot > j + 1 ? change - knot : j + 1;
            if (end > N) end = N;
            for (; j < end; ++j) {
                const long at = (long)j * F + i;
                if (standing) {
                    stance[at] = 1;
                    memcpy(footholds + 3 * at, anchor, sizeof(double) * 3);
                } else {
                    swing_at(p, p_lift, target, lift, t_land, p->times[j], swing + 3 * at);
                }
            }
        }
    }
    for (int j = 0; j < N; ++j) {
        dts[j] = p->times[j + 1] - p->times[j];
        com[3 * j] = com_now[0] + p->xy[2 * j] - p->xy[0];
        com[3 * j + 1] = com_now[1] + p->xy[2 * j + 1] - p->xy[1];
        com[3 * j + 2] = p->com_height;
    }
    for (int j = 0; j <= N; ++j) {
        double *qj = q_ref + (long)j * p->nq, *vj = v_ref + (long)j * p->nv;
        memcpy(qj, p->q0, sizeof(double) * p->nq);
        qj[0] = p->xy[2 * j], qj[1] = p->xy[2 * j + 1];
        qj[3] = qj[4] = 0.0;
        qj[5] = sin(0.5 * p->yaw[j]), qj[6] = cos(0.5 * p->yaw[j]);
        vj[0] = p->cmd[3 * j], vj[1] = p->cmd[3 * j + 1], vj[5] = p->cmd[3 * j + 2];
    }
}
