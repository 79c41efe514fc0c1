/* Eight doubles, the unit of the C libraries' padded rows (GCC's vector extension), loaded and
 * stored at any alignment; and the processor's own vector, a lane of LANES doubles: 8 with
 * AVX-512, 4 with AVX, 2 with SSE2 or NEON (LIFTOFF_LANES, if defined, overrides, so that every
 * width can be built and checked on one machine). A vec is PARTS lanes. GCC splits a vec wider
 * than the registers into pieces: free for arithmetic on a vec in a variable (loaded and stored
 * lane by lane, below), but an array of them, held across a loop, goes through the stack a piece
 * at a time (on AVX2, a Riccati recursion 7 times slower).
 * Loops that keep many sums in registers therefore hold them as lanes, in blocks sized to the
 * REGISTERS vector registers. The libraries of liftoff include this file (dynamics/codegen.py's
 * load_library puts this folder on their include path and this file's text in their cache key). */
#ifndef LIFTOFF_VECTORS_H
#define LIFTOFF_VECTORS_H

#include <string.h>

typedef double vec __attribute__((vector_size(8 * sizeof(double))));

#if defined(__AVX512F__) || defined(__aarch64__)
#define REGISTERS 32
#else
#define REGISTERS 16
#endif

#ifndef LIFTOFF_LANES
#if defined(__AVX512F__)
#define LIFTOFF_LANES 8
#elif defined(__AVX__)
#define LIFTOFF_LANES 4
#else
#define LIFTOFF_LANES 2
#endif
#endif
#define LANES LIFTOFF_LANES
#define PARTS (8 / LANES)

typedef double lane __attribute__((vector_size(LANES * sizeof(double))));

static inline lane load_lane(const double *p) {
    lane v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store_lane(double *p, lane v) { memcpy(p, &v, sizeof v); }

/* A vec as its lanes: load() and store() move a vec lane by lane. Copied whole (memcpy), a vec
   wider than the registers goes through the stack and the general registers eight bytes at a time
   (on AVX2, the Riccati recursion's solve with G took a third of the recursion's time). */
typedef union {
    vec v;
    lane l[PARTS];
} vec_lanes;

static inline vec load(const double *p) {
    vec_lanes u;
    for (int l = 0; l < PARTS; ++l) u.l[l] = load_lane(p + LANES * l);
    return u.v;
}

static inline void store(double *p, vec v) {
    const vec_lanes u = {v};
    for (int l = 0; l < PARTS; ++l) store_lane(p + LANES * l, u.l[l]);
}

#endif
