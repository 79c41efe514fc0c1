/* Eight doubles, which the compiler keeps in one or two vector registers (GCC's vector
 * extension: one AVX-512 register, or two AVX2 ones), loaded and stored at any alignment. The C
 * libraries of liftoff include it (dynamics/codegen.py's load_library puts this folder on their
 * include path and this file's text in their cache key). */
#ifndef LIFTOFF_VECTORS_H
#define LIFTOFF_VECTORS_H

#include <string.h>

typedef double vec __attribute__((vector_size(8 * sizeof(double))));

static inline vec load(const double *p) {
    vec v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store(double *p, vec v) { memcpy(p, &v, sizeof v); }

#endif
