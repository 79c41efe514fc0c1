/* The MuJoCo plant's contact readings (problems/mpc/plants/mujoco_plant.py), compiled: the same
 * sums in the same order, on MuJoCo's model and data.
 *
 * A named contact k is a set of the robot's geoms: per geom g, its named contacts are
 * names[first[g] .. first[g + 1]). Over MuJoCo's contacts between such a geom and a surface
 * (surface[g] != 0), in MuJoCo's order: the force on the robot (mj_contactForce, turned to the
 * world axes), the sums of the contact points and of the velocities of the robot's material
 * points there (mj_objectVelocity of the geom) weighted by the normal force, the normal force,
 * and the deepest penetration. Each reading, a row of out (n, 11): touching (1 or 0), the force
 * (3), the position (3: the weighted mean contact point, or, not touching, the origin of the
 * contact's frame, at offset[k] in body[k], at the state after the step: mj_kinematics runs
 * first), the penetration and the velocity (3: the weighted mean, or zero).
 *
 * MuJoCo's functions come as addresses (liftoff_set_mujoco), the library that the Python
 * bindings loaded; mjModel and mjData are those of its headers (liftoff_mujoco_version).
 */
#include <math.h>
#include <string.h>

#include <mujoco/mujoco.h>

#pragma GCC optimize("fp-contract=off")

typedef void contact_force_t(const mjModel *, const mjData *, int, mjtNum *);
typedef void object_velocity_t(const mjModel *, const mjData *, int, int, mjtNum *, int);
typedef void kinematics_t(const mjModel *, mjData *);

static contact_force_t *contact_force;
static object_velocity_t *object_velocity;
static kinematics_t *kinematics;

/* mj_contactForce, mj_objectVelocity and mj_kinematics. */
void liftoff_set_mujoco(void **functions) {
    contact_force = (contact_force_t *)functions[0];
    object_velocity = (object_velocity_t *)functions[1];
    kinematics = (kinematics_t *)functions[2];
}

/* The version of the headers this library was compiled with. */
int liftoff_mujoco_version(void) { return mjVERSION_HEADER; }

void liftoff_contact_readings(const mjModel *m, mjData *d, int n, const int *first, const int *names,
                              const unsigned char *surface, const int *body, const double *offset, double *out) {
    double sums[n > 0 ? n : 1][11], wrench[6], twist[6];
    memset(sums, 0, sizeof(sums));
    for (int i = 0; i < d->ncon; ++i) {
        const mjContact *c = d->contact + i;
        const int g1 = c->geom[0], g2 = c->geom[1];
        const int robot = surface[g1] ? g2 : g1;
        if (surface[g1] == surface[g2] || first[robot] == first[robot + 1]) continue;
        contact_force(m, d, i, wrench); /* in the contact's frame: its rows, normal first */
        object_velocity(m, d, mjOBJ_GEOM, robot, twist, 0);
        const double fn = wrench[0], f1 = wrench[1], f2 = wrench[2], sign = surface[g1] ? 1.0 : -1.0;
        const double *frame = c->frame, *pos = c->pos, *centre = d->geom_xpos + 3 * robot;
        const double x = pos[0] - centre[0], y = pos[1] - centre[1], z = pos[2] - centre[2];
        const double wx = twist[0], wy = twist[1], wz = twist[2];
        const double point[3] = {twist[3] + wy * z - wz * y, twist[4] + wz * x - wx * z, twist[5] + wx * y - wy * x};
        const double normal = fabs(fn);
        double row[10];
        for (int j = 0; j < 3; ++j) {
            row[j] = sign * (fn * frame[j] + f1 * frame[3 + j] + f2 * frame[6 + j]);
            row[3 + j] = normal * pos[j];
            row[6 + j] = normal * point[j];
        }
        row[9] = normal;
        for (int a = first[robot]; a < first[robot + 1]; ++a) {
            double *total = sums[names[a]];
            for (int j = 0; j < 10; ++j) total[j] += row[j];
            if (-c->dist > total[10]) total[10] = -c->dist;
        }
    }
    int placed = 0;
    for (int k = 0; k < n; ++k) {
        const double *s = sums[k], weight = s[9];
        double *o = out + 11 * k;
        o[0] = weight > 0.0;
        memcpy(o + 1, s, sizeof(double) * 3);
        o[7] = s[10];
        if (weight > 0.0)
            for (int j = 0; j < 3; ++j) o[4 + j] = s[3 + j] / weight, o[8 + j] = s[6 + j] / weight;
        else {
            if (!placed) kinematics(m, d), placed = 1;
            const double *p = d->xpos + 3 * body[k], *R = d->xmat + 9 * body[k], *r = offset + 3 * k;
            for (int j = 0; j < 3; ++j) {
                o[4 + j] = p[j] + (R[3 * j] * r[0] + R[3 * j + 1] * r[1] + R[3 * j + 2] * r[2]);
                o[8 + j] = 0.0;
            }
        }
    }
}
