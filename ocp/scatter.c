/* A group's dense blocks from a sparse kernel's outputs (ocp/kernels.py), compiled: one pass
 * over the group's stages.
 *
 * Block b reads the output src[b] (S, nnz[b]), the structural nonzeros of a kernel's output,
 * and writes its count[b] entries k into dst[b] (S, size[b]), the block of the group's layout:
 * dst[b][s, dst_index[k]] = src[b][s, src_index[k]], or zero where src_index[k] is -1. The
 * other entries of dst[b] are left as they are. The index arrays of the blocks follow each
 * other in src_index and dst_index.
 */
void liftoff_scatter(int S, int blocks, const int *nnz, const int *size, const int *count,
                     const double *const *src, double *const *dst, const int *src_index, const int *dst_index) {
    for (int b = 0; b < blocks; ++b) {
        for (int s = 0; s < S; ++s) {
            const double *from = src[b] + (long)s * nnz[b];
            double *to = dst[b] + (long)s * size[b];
            for (int k = 0; k < count[b]; ++k) to[dst_index[k]] = src_index[k] >= 0 ? from[src_index[k]] : 0.0;
        }
        src_index += count[b];
        dst_index += count[b];
    }
}
