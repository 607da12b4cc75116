/* The one C++ file: FAISS (Debian's libfaiss-dev ships its C++ library only, without the C
 * API's implementation) behind a C function for pruning/knn.c. Compiled only when CMake finds
 * FAISS (INCA_HAS_FAISS). Exceptions never cross into C: FAISS's become an error text, an
 * allocation failure its own code. Tested through knn_faiss in test_pruning_knn.c. */
#include <faiss/Index.h>
#include <faiss/IVFlib.h>
#include <faiss/IndexIVF.h>
#include <faiss/index_factory.h>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <new>
#include <vector>

extern "C" int knn_faiss_raw(const float *x, int64_t n, int64_t f, int k, const char *factory, int nprobe, uint64_t seed,
                             int32_t *nbr, float *dist, char *err, size_t errlen);

/* 0: done; 1: FAISS refused (err holds why); 2: out of memory. x: n x f rows, searched against
 * themselves with k + 1 neighbours so that the row itself can be dropped (an approximate index
 * may miss it: then the farthest goes). Squared L2 distances. */
extern "C" int knn_faiss_raw(const float *x, int64_t n, int64_t f, int k, const char *factory, int nprobe, uint64_t seed,
                             int32_t *nbr, float *dist, char *err, size_t errlen) {
    try {
        std::unique_ptr<faiss::Index> idx(faiss::index_factory((int)f, factory, faiss::METRIC_L2));
        /* the IVF inside any wrapper (PCA, OPQ, refine): seeded k-means, nprobe lists */
        if (faiss::IndexIVF *ivf = faiss::ivflib::try_extract_index_ivf(idx.get())) {
            ivf->cp.seed = (int)(seed & 0x7fffffff);   /* k-means' sample and start: seeded */
            ivf->nprobe = (size_t)(nprobe > 0 ? nprobe : 1);
        }
        idx->train((faiss::Index::idx_t)n, x);
        idx->add((faiss::Index::idx_t)n, x);
        const int64_t kk = k + 1, chunk = 16384;   /* rows per search call: bounded buffers */
        std::vector<float> d((size_t)(chunk * kk));
        std::vector<faiss::Index::idx_t> lab((size_t)(chunk * kk));
        for (int64_t i0 = 0; i0 < n; i0 += chunk) {
            const int64_t m = n - i0 < chunk ? n - i0 : chunk;
            idx->search((faiss::Index::idx_t)m, x + i0 * f, (faiss::Index::idx_t)kk, d.data(), lab.data());
            for (int64_t r = 0; r < m; r++) {
                const int64_t i = i0 + r;
                int o = 0;
                for (int64_t j = 0; j < kk && o < k; j++) {
                    const faiss::Index::idx_t v = lab[(size_t)(r * kk + j)];
                    if (v == i || v < 0) continue;   /* itself; -1: fewer results than asked */
                    nbr[i * k + o] = (int32_t)v;
                    if (dist) dist[i * k + o] = d[(size_t)(r * kk + j)];
                    o++;
                }
                if (o == 0) {
                    std::snprintf(err, errlen, "row %lld: the probed lists hold no other row (raise --faiss-nprobe)",
                                  (long long)i);
                    return 1;
                }
                for (; o < k; o++) {   /* fewer than k others in the probed lists: the last again */
                    nbr[i * k + o] = nbr[i * k + o - 1];
                    if (dist) dist[i * k + o] = dist[i * k + o - 1];
                }
            }
        }
        return 0;
    } catch (const std::bad_alloc &) {
        return 2;
    } catch (const std::exception &e) {
        std::snprintf(err, errlen, "%s", e.what());
        return 1;
    } catch (...) {
        std::snprintf(err, errlen, "unknown FAISS error");
        return 1;
    }
}
