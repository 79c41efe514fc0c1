/* A group's dense blocks from a sparse kernel's outputs (ocp/kernels.py), compiled: one pass
 * over the group's stages.
 *
 * Block b reads the output src[b] (S, nnz[b]), the structural nonzeros of a kernel's output,
 * and writes dst[b] (S, size[b]), the block of the group's layout: zeros, then for its count[b]
 * entries k, dst[b][s, dst_index[k]] = src[b][s, src_index[k]]. The index arrays of the blocks
 * follow each other in src_index and dst_index.
 */
#include <string.h>

void liftoff_scatter(int S, int blocks, const int *nnz, const int *size, const int *count,
                     const double *const *src, double *const *dst, const int *src_index, const int *dst_index) {
    for (int b = 0; b < blocks; ++b) {
        for (int s = 0; s < S; ++s) {
            const double *from = src[b] + (long)s * nnz[b];
            double *to = dst[b] + (long)s * size[b];
            memset(to, 0, sizeof(double) * size[b]);
            for (int k = 0; k < count[b]; ++k) to[dst_index[k]] = from[src_index[k]];
        }
        src_index += count[b];
        dst_index += count[b];
    }
}
