/* integrate and difference of dynamics/manifold.py, compiled: the same formulas, branches and
 * order of operations, one configuration after the other.
 *
 * Row-major stacks over B configurations: q, q0, q1, the integrated out (B, nq); v, the
 * difference out (B, nv). The joints of a model are described by its layout, an int array
 *   (free_flyer, nvec, ncont, iq[nvec], iv[nvec], cq[ncont], cv[ncont]):
 * the vector joints (revolute, prismatic) at q index iq and v index iv, the continuous joints
 * storing (cos, sin) of their angle at q indices cq, cq + 1 and moving at v index cv, and, when
 * free_flyer is 1, the SE(3) root in q[0:7] = (x, y, z, qx, qy, qz, qw) and v[0:6] = (linear,
 * angular), moved in its LOCAL frame (Pinocchio's convention):
 * integrate: q (+) v = M(q) exp6(v); the product quaternion is normalized and takes the sign
 *   that keeps it on the side of q's (non-negative dot product).
 * difference: q1 (-) q0 = log6(M(q0)^-1 M(q1)).
 * exp6, log6 and their Taylor series below a rotation angle of SMALL are those of manifold.py;
 * without fused multiply-adds, the results are numpy's up to the last bits of sin, cos, atan2.
 */
#include <math.h>
#include <string.h>

#pragma GCC optimize("fp-contract=off")

#define SMALL 1e-4 /* _SMALL of manifold.py */

/* Hamilton product a * b of quaternions stored (x, y, z, w). */
static void quat_multiply(const double *a, const double *b, double *out) {
    const double cross[3] = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
    for (int i = 0; i < 3; ++i) out[i] = a[3] * b[i] + b[3] * a[i] + cross[i];
    out[3] = a[3] * b[3] - (a[0] * b[0] + a[1] * b[1] + a[2] * b[2]);
}

/* The rotation matrix R (3, 3) of the unit quaternion q. */
static void rotation(const double *q, double R[3][3]) {
    const double x = q[0], y = q[1], z = q[2], w = q[3];
    R[0][0] = 1 - 2 * (y * y + z * z), R[0][1] = 2 * (x * y - z * w), R[0][2] = 2 * (x * z + y * w);
    R[1][0] = 2 * (x * y + z * w), R[1][1] = 1 - 2 * (x * x + z * z), R[1][2] = 2 * (y * z - x * w);
    R[2][0] = 2 * (x * z - y * w), R[2][1] = 2 * (y * z + x * w), R[2][2] = 1 - 2 * (x * x + y * y);
}

/* M = I + a [w]x + b [w]x^2. */
static void skew_polynomial(const double *w, double a, double b, double M[3][3]) {
    const double W[3][3] = {{0, -w[2], w[1]}, {w[2], 0, -w[0]}, {-w[1], w[0], 0}};
    for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k) {
            double WW = W[i][0] * W[0][k];
            WW += W[i][1] * W[1][k];
            WW += W[i][2] * W[2][k];
            M[i][k] = ((i == k) + a * W[i][k]) + b * WW;
        }
}

/* out = M x, or M^T x when transposed. */
static void matvec(double M[3][3], const double *x, int transposed, double *out) {
    for (int i = 0; i < 3; ++i) {
        double s = (transposed ? M[0][i] : M[i][0]) * x[0];
        s += (transposed ? M[1][i] : M[i][1]) * x[1];
        s += (transposed ? M[2][i] : M[i][2]) * x[2];
        out[i] = s;
    }
}

/* exp6 of the twist nu = (v, w): the quaternion and translation of the placement. */
static void exp6(const double *nu, double *quat, double *p) {
    const double *w = nu + 3;
    const double theta = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
    const int small = theta < SMALL;
    const double half = small ? 0.5 - theta * theta / 48 : sin(theta / 2) / theta;
    for (int i = 0; i < 3; ++i) quat[i] = half * w[i];
    quat[3] = cos(theta / 2);
    /* the left Jacobian of the SO(3) exponential, _coefficients' (1 - cos)/t^2, (t - sin)/t^3 */
    const double t2 = theta * theta;
    const double a = small ? 0.5 - t2 / 24 : (1 - cos(theta)) / (theta * theta);
    const double b = small ? 1.0 / 6 - t2 / 120 : (theta - sin(theta)) / pow(theta, 3);
    double J[3][3];
    skew_polynomial(w, a, b, J);
    matvec(J, nu, 0, p);
}

/* log6 of the placement (quat, p) into xi = (v, w); quat is flipped to w >= 0 in place. */
static void log6(double *quat, const double *p, double *xi) {
    if (quat[3] < 0)
        for (int i = 0; i < 4; ++i) quat[i] = -quat[i];
    const double s = sqrt(quat[0] * quat[0] + quat[1] * quat[1] + quat[2] * quat[2]);
    const double theta = 2 * atan2(s, quat[3]);
    const double f = s < 1e-12 ? 2 / quat[3] : theta / s;
    double *w = xi + 3;
    for (int i = 0; i < 3; ++i) w[i] = f * quat[i];
    const double c = theta < SMALL ? 1.0 / 12 + theta * theta / 720
                                   : (1 - theta * sin(theta) / (2 * (1 - cos(theta)))) / (theta * theta);
    double V_inv[3][3];
    skew_polynomial(w, -0.5, c, V_inv);
    matvec(V_inv, p, 0, xi);
}

void liftoff_integrate(int B, int nq, int nv, const int *layout, const double *q, const double *v, double *out) {
    const int free_flyer = layout[0], nvec = layout[1], ncont = layout[2];
    const int *iq = layout + 3, *iv = iq + nvec, *cq = iv + nvec, *cv = cq + ncont;
    for (int r = 0; r < B; ++r, q += nq, v += nv, out += nq) {
        memcpy(out, q, nq * sizeof(double));
        for (int k = 0; k < nvec; ++k) out[iq[k]] = q[iq[k]] + v[iv[k]];
        for (int k = 0; k < ncont; ++k) {
            const double c = q[cq[k]], s = q[cq[k] + 1], cd = cos(v[cv[k]]), sd = sin(v[cv[k]]);
            out[cq[k]] = c * cd - s * sd;
            out[cq[k] + 1] = s * cd + c * sd;
        }
        if (free_flyer) {
            const double *quat0 = q + 3;
            double quat_exp[4], p_exp[3], quat[4], R0[3][3], dp[3];
            exp6(v, quat_exp, p_exp);
            quat_multiply(quat0, quat_exp, quat);
            const double norm = sqrt(quat[0] * quat[0] + quat[1] * quat[1] + quat[2] * quat[2] + quat[3] * quat[3]);
            for (int i = 0; i < 4; ++i) quat[i] /= norm;
            const double side = quat[0] * quat0[0] + quat[1] * quat0[1] + quat[2] * quat0[2] + quat[3] * quat0[3];
            rotation(quat0, R0);
            matvec(R0, p_exp, 0, dp);
            for (int i = 0; i < 3; ++i) out[i] = q[i] + dp[i];
            for (int i = 0; i < 4; ++i) out[3 + i] = side < 0 ? -quat[i] : quat[i];
        }
    }
}

void liftoff_difference(int B, int nq, int nv, const int *layout, const double *q0, const double *q1, double *out) {
    const int free_flyer = layout[0], nvec = layout[1], ncont = layout[2];
    const int *iq = layout + 3, *iv = iq + nvec, *cq = iv + nvec, *cv = cq + ncont;
    for (int r = 0; r < B; ++r, q0 += nq, q1 += nq, out += nv) {
        memset(out, 0, nv * sizeof(double));
        for (int k = 0; k < nvec; ++k) out[iv[k]] = q1[iq[k]] - q0[iq[k]];
        for (int k = 0; k < ncont; ++k) {
            const double c0 = q0[cq[k]], s0 = q0[cq[k] + 1], c1 = q1[cq[k]], s1 = q1[cq[k] + 1];
            out[cv[k]] = atan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1);
        }
        if (free_flyer) {
            /* M(q0)^-1 M(q1): _relative of manifold.py */
            const double conjugate[4] = {-q0[3], -q0[4], -q0[5], q0[6]};
            const double dp[3] = {q1[0] - q0[0], q1[1] - q0[1], q1[2] - q0[2]};
            double quat[4], p[3], R0[3][3];
            quat_multiply(conjugate, q1 + 3, quat);
            rotation(q0 + 3, R0);
            matvec(R0, dp, 1, p);
            log6(quat, p, out);
        }
    }
}
