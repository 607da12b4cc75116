/* Construction and release of the mini-batch aggregation operator (agg.h): the context and Â on
 * it, the batch slots, the history tables, scratch and staging, M^0 = ÂX, and the buffers made
 * later on demand (extra per-batch arrays, the layer-wise pass buffers). Tested in test_incagg.c
 * and test_memory.c. */
#include "memory/agg.h"
#include "memory/agg_impl.h"
#include "core/alloc.h"
#include "core/status.h"
#include "kernels/backend.h"
#include <stdio.h>
#include <string.h>

void agg_free(agg_t **pg) {
    if (!pg || !*pg) return;
    agg_t *g = *pg;
    csr_free(&g->m0b);
    for (int i = 0; i < g->npanels; i++) kc_mat_free(g->tk, &g->panels[i]);
    inca_free(g->panels);
    kc_mat_free(g->tk, &g->own_rows);
    if (g->own_ta) kc_mat_free(g->tk, &g->ta_m);
    kc_release(g->kc, KERN_MEM_PINNED, g->stage);
    for (int st = 0; st < g->nsites; st++) kc_release(g->kc, KERN_MEM_PINNED, g->push_h[st]);
    for (int k = 0; k < 2; k++) {
        struct agg_slot *sl = &g->slot[k];
        kc_mat_free(g->kc, &sl->bb);
        kc_mat_free(g->kc, &sl->bbt);
        kc_mat_free(g->kc, &sl->bh);
        for (int m = 0; m < 3; m++) {
            kc_release(g->kc, KERN_MEM_PINNED, sl->rp[m]);
            kc_release(g->kc, KERN_MEM_PINNED, sl->col[m]);
            kc_release(g->kc, KERN_MEM_PINNED, sl->val[m]);
        }
        kc_release(g->kc, KERN_MEM_PINNED, sl->nodes_h);
        kc_release(g->kc, KERN_MEM_PINNED, sl->halo_h);
        for (int e = 0; e < AGG_MAX_EXTRA; e++) kc_release(g->kc, KERN_MEM_PINNED, sl->extra_h[e]);
        for (int st = 0; st < g->nsites; st++) {
            kc_release(g->kc, KERN_MEM_PINNED, g->stM[k][st]);
            kc_release(g->kc, KERN_MEM_PINNED, g->stS[k][st]);
            kc_release(g->kc, KERN_MEM_PINNED, g->stH[k][st]);
        }
    }
    if (g->own_a) kc_mat_free(g->kc, &g->a_m);
    for (int i = 0; i < g->ndev; i++) kc_release(g->kc, KERN_MEM_DEVICE, g->devmem[i]);
    inca_free(g->devmem);
    mem_arena_destroy(&g->arena);
    inca_free(g);
    *pg = NULL;
}

/* bytes for the operator: device memory (zeroed) when on_dev, else from the NUMA arena */
static void *take(agg_t *g, size_t bytes, const char *label, int on_dev) {
    if (!on_dev) return mem_arena_alloc(g->arena, bytes, label);
    if (g->ndev == g->capdev) {
        const int cap = g->capdev ? 2 * g->capdev : 16;
        void **nd = inca_realloc(g->devmem, (size_t)cap * sizeof *nd);
        if (!nd) return NULL;
        g->devmem = nd;
        g->capdev = cap;
    }
    void *p = NULL;
    if (kc_alloc(g->kc, KERN_MEM_DEVICE, bytes ? bytes : 1, &p) != INCA_OK) return NULL;
    g->devmem[g->ndev++] = p;
    return p;
}

static int table(agg_t *g, hist_t *h, char which, int site) {
    char label[32];
    snprintf(label, sizeof label, "%s%d", which == 'H' ? "hist" : which == 'M' ? "M" : which == 'S' ? "S" : "P", site);
    int rc = INCA_OK;
    if (!g->tdev) rc = hist_init(h, g->arena, g->n, g->dim[site], g->dtype, label);
    else {
        *h = (hist_t){.n = g->n, .f = g->dim[site], .dtype = g->dtype};
        const char *prev = kc_mem_tag(g->kc, "tables");   /* the device's accounting (--device-memory-budget) */
        if (!(h->data = take(g, (size_t)hist_bytes(h), label, 1))) rc = INCA_ENOMEM;
        kc_mem_tag(g->kc, prev);
    }
    if (rc == INCA_OK) g->table_bytes += hist_bytes(h);
    return rc;
}

static void *scratch(agg_t *g, int64_t floats, const char *label, int on_dev) {
    void *p = take(g, sizeof(float) * (size_t)(floats > 0 ? floats : 1), label, on_dev);
    const int64_t bytes = (int64_t)sizeof(float) * (floats > 0 ? floats : 1);
    if (p) g->scratch_bytes += bytes;
    if (p && (!on_dev || !g->dev)) g->scratch_host_bytes += bytes;
    return p;
}

/* Pinned host staging (off the CPU only), counted as the host memory it is. */
static int pin(agg_t *g, size_t bytes, void **p) {
    int rc = kc_alloc(g->kc, KERN_MEM_PINNED, bytes, p);
    if (rc == INCA_OK) g->scratch_host_bytes += (int64_t)bytes;
    return rc;
}

/* The configuration errors agg_create refuses before it allocates anything. */
static int agg_check_config(const agg_config_t *cfg) {
    const int ns = cfg->nsites, method = cfg->method;
    if (ns < 0 || ns > AGG_MAX_SITES)
        return inca_fail(INCA_EINVAL, "mini-batch training supports at most %d aggregation sites, model has %d", AGG_MAX_SITES, ns);
    if (!cfg->a || cfg->a->n_rows != cfg->n || cfg->a->n_cols != cfg->n)
        return inca_fail(INCA_EINVAL, "mini-batch training needs an %lld x %lld adjacency", (long long)cfg->n, (long long)cfg->n);
    if (method < AGG_CLUSTER || method > AGG_INCAGG) return inca_fail(INCA_EINVAL, "aggregation operator: unknown method %d", method);
    if (cfg->source != AGG_SRC_PUSH && cfg->source != AGG_SRC_RECOMPUTE)
        return inca_fail(INCA_EINVAL, "aggregation operator: unknown refresh source %d", cfg->source);
    if (cfg->m0_sparse && (cfg->m0_sparse->n_rows != cfg->n || cfg->m0_sparse->n_cols != cfg->in_dim || !cfg->m0_sparse->val))
        return inca_fail(INCA_EINVAL, "aggregation operator: the sparse M^0 is %lld x %lld, expected %lld x %lld with values",
                         (long long)cfg->m0_sparse->n_rows, (long long)cfg->m0_sparse->n_cols, (long long)cfg->n, (long long)cfg->in_dim);
    if (cfg->x_tf_dim > 0 && method == AGG_GAS)   /* its halo rows of x would need the weight too */
        return inca_fail(INCA_EINVAL, "aggregation operator: x_tf_dim with gas (its halo rows of x would need the "
                         "layer's weight)");
    return INCA_OK;
}

/* The context, where the tables live, and Â on the context (and on the host for host tables). */
static int agg_ctx_setup(agg_t *g, const agg_config_t *cfg) {
    int rc = INCA_OK;
    g->kc = cfg->kc ? cfg->kc : kc_cpu();
    g->dev = kc_device(g->kc) != KERN_DEV_CPU;
    g->host_tables = g->dev && cfg->host_tables;
    g->tdev = g->dev && !g->host_tables;
    g->tk = g->host_tables ? kc_cpu() : g->kc;
    g->x_t = g->host_tables ? cfg->x_host : cfg->x;
    if (g->host_tables && !cfg->x_host) rc = inca_fail(INCA_EINVAL, "aggregation operator: host tables need x on the host");
    g->a_m = cfg->a_m;
    if (rc == INCA_OK && !g->a_m) {
        g->own_a = 1;
        rc = kc_mat_upload(g->kc, cfg->a, &g->a_m);
    }
    g->ta_m = g->a_m;
    if (rc == INCA_OK && g->host_tables) {
        g->own_ta = 1;
        rc = kc_mat_upload(g->tk, cfg->a, &g->ta_m);
    }
    return rc;
}

/* The batch's matrices: views of the loader's on the CPU, uploads of this capacity off it (two
 * slots on a device: one batch uploads while the other runs). */
static int agg_slots_create(agg_t *g, const agg_config_t *cfg, int64_t nbm, int64_t nnzm, int64_t cols) {
    const int method = cfg->method;
    int rc = INCA_OK;
    g->nslots = g->dev ? 2 : 1;
    g->cur = g->nslots - 1;   /* the first batch goes to slot 0 */
    for (int k = 0; k < g->nslots && rc == INCA_OK; k++) {
        struct agg_slot *sl = &g->slot[k];
        if (rc == INCA_OK) rc = kc_mat_create(g->kc, nbm, cols, nnzm, &sl->bb);
        if (rc == INCA_OK) rc = kc_mat_create(g->kc, nbm, cols, nnzm, &sl->bbt);
        if (rc == INCA_OK && method == AGG_GAS) rc = kc_mat_create(g->kc, nbm, cols, nnzm, &sl->bh);
        for (int m = 0; m < 3 && rc == INCA_OK && g->dev; m++) {
            const size_t nz = (size_t)(nnzm > 0 ? nnzm : 1);
            if ((rc = pin(g, sizeof(int64_t) * (size_t)(nbm + 1), (void **)&sl->rp[m])) ||
                (rc = pin(g, sizeof(int32_t) * nz, (void **)&sl->col[m])))
                break;
            rc = pin(g, sizeof(float) * nz, (void **)&sl->val[m]);
        }
        if (rc == INCA_OK && g->dev &&
            !(rc = pin(g, sizeof(int64_t) * (size_t)nbm, (void **)&sl->nodes_h)))
            rc = pin(g, sizeof(int64_t) * (size_t)(cfg->halo_max > 0 ? cfg->halo_max : 1),
                          (void **)&sl->halo_h);
    }
    return rc;
}

/* The history tables of every site: H (gas), M, S and P (incagg; M^0 from the store when given). */
static int agg_tables_create(agg_t *g, const agg_config_t *cfg) {
    const int ns = cfg->nsites, method = cfg->method;
    int rc = INCA_OK;
    for (int s = 0; s < ns && rc == INCA_OK; s++) {
        if (method == AGG_GAS && !g->fixed[s]) rc = table(g, &g->H[s], 'H', s);
        else if (method == AGG_INCAGG) {
            if (g->fixed[s] && g->m0s) {
                /* no table: the trainer's sparse M^0 (agg_config.m0_sparse) */
            } else if (g->fixed[s] && cfg->m0) {   /* the store's M^0: a view on the host, a copy on a device */
                g->m0_borrowed = 1;
                g->M[s] = (hist_t){.n = g->n, .f = g->dim[s], .dtype = g->dtype, .data = (void *)cfg->m0};
                if (g->tdev) {
                    const char *prev = kc_mem_tag(g->kc, "tables");
                    g->M[s].data = take(g, (size_t)hist_bytes(&g->M[s]), "M0_store", 1);
                    kc_mem_tag(g->kc, prev);
                    if (!g->M[s].data) rc = INCA_ENOMEM;
                    else rc = kc_copy(g->kc, g->M[s].data, cfg->m0, (size_t)hist_bytes(&g->M[s]), KERN_H2D, KERN_STREAM_COMPUTE);
                }
            } else
            rc = table(g, &g->M[s], 'M', s);
            if (rc == INCA_OK && !g->fixed[s]) rc = table(g, &g->S[s], 'S', s);
            if (rc == INCA_OK && !g->fixed[s] && g->source == AGG_SRC_PUSH && !g->single) rc = table(g, &g->P[s], 'P', s);
        }
    }
    return rc;
}

/* IncAgg's scratch: a batch's delta rows, and row panels of Â for bf16 tables. */
static int agg_incagg_scratch(agg_t *g, const agg_config_t *cfg) {
    const int method = cfg->method;
    int rc = INCA_OK;
    if (rc == INCA_OK && method == AGG_INCAGG) {
        g->sbuf_rows = cfg->nb_max ? cfg->nb_max : 1;
        if (!(g->sbuf = scratch(g, g->sbuf_rows * g->maxdim, "scratch_delta", g->dev))) rc = INCA_ENOMEM;
        if (rc == INCA_OK && g->xtf > 0 && !g->host_tables && !g->m0s &&
            !(g->xbase = scratch(g, g->sbuf_rows * g->in_dim, "scratch_base_rows", g->dev)))
            rc = INCA_ENOMEM;
        if (rc == INCA_OK && g->dtype == HIST_BF16) {
            const int64_t row_bytes = (int64_t)sizeof(float) * g->maxdim;
            if (cfg->panel_bytes > 0) g->panel_rows = cfg->panel_bytes / row_bytes;
            else {
                g->panel_rows = g->n / 16 > AGG_PANEL_MIN_ROWS ? g->n / 16 : AGG_PANEL_MIN_ROWS;
                if (g->panel_rows > AGG_PANEL_BYTES / row_bytes) g->panel_rows = AGG_PANEL_BYTES / row_bytes;
            }
            if (g->panel_rows < 1) g->panel_rows = 1;
            if (g->panel_rows > g->n) g->panel_rows = g->n > 0 ? g->n : 1;
            if (!(g->panel = scratch(g, g->panel_rows * g->maxdim, "scratch_panel", g->tdev))) rc = INCA_ENOMEM;
            const int np = (int)((g->n + g->panel_rows - 1) / g->panel_rows);
            if (rc == INCA_OK && !(g->panels = inca_calloc((size_t)(np > 0 ? np : 1), sizeof *g->panels))) rc = INCA_ENOMEM;
            for (int p = 0; p < np && rc == INCA_OK; p++, g->npanels++) {
                const int64_t r0 = (int64_t)p * g->panel_rows, r1 = r0 + g->panel_rows < g->n ? r0 + g->panel_rows : g->n;
                rc = kc_mat_rows_view(g->tk, g->ta_m, r0, r1, &g->panels[p]);
            }
        }
    }
    return rc;
}

int agg_add_extra(agg_t *g, int e, int64_t bytes) {
    if (e < 0 || e >= AGG_MAX_EXTRA || g->extra_cap[e] > 0)
        return inca_fail(INCA_EINVAL, "aggregation operator: extra array %d is not free", e);
    int rc = INCA_OK;
    for (int k = 0; k < g->nslots && rc == INCA_OK && g->dev && bytes > 0; k++) {
        if (!(g->slot[k].extra_d[e] = take(g, (size_t)bytes, "batch_extra", 1))) rc = INCA_ENOMEM;
        else rc = pin(g, (size_t)bytes, &g->slot[k].extra_h[e]);
    }
    if (rc == INCA_OK) g->extra_cap[e] = bytes;
    for (int k = 0; k < g->nslots && rc != INCA_OK; k++) {   /* none of it: the device blocks go with the operator */
        kc_release(g->kc, KERN_MEM_PINNED, g->slot[k].extra_h[e]);
        g->slot[k].extra_h[e] = NULL;
        g->slot[k].extra_d[e] = NULL;
    }
    return rc;
}

/* Off the CPU: each slot's batch and halo ids and the trainer's extra per-batch arrays. */
static int agg_slot_ids(agg_t *g, const agg_config_t *cfg, int64_t nbm) {
    int rc = INCA_OK;
    for (int k = 0; k < g->nslots && rc == INCA_OK && g->dev; k++) {
        g->slot[k].nodes_d = take(g, sizeof(int64_t) * (size_t)nbm, "ids_batch", 1);
        g->slot[k].halo_d = take(g, sizeof(int64_t) * (size_t)(cfg->halo_max > 0 ? cfg->halo_max : 1), "ids_halo", 1);
        if (!g->slot[k].nodes_d || !g->slot[k].halo_d) rc = INCA_ENOMEM;
    }
    for (int e = 0; e < AGG_MAX_EXTRA && rc == INCA_OK; e++)
        if (cfg->extra_bytes[e] > 0) rc = agg_add_extra(g, e, cfg->extra_bytes[e]);
    return rc;
}

/* Host tables: the pinned stage whole tables move through, and each site's staged rows. */
static int agg_host_stage(agg_t *g, const agg_config_t *cfg, int64_t nbm) {
    const int ns = cfg->nsites, method = cfg->method;
    int rc = INCA_OK;
    if (rc == INCA_OK && g->host_tables) {   /* whole tables move in chunks of a batch's rows */
        g->stage_rows = nbm > cfg->halo_max ? nbm : cfg->halo_max;
        if ((rc = pin(g, sizeof(float) * (size_t)(g->stage_rows * g->maxdim),
                           (void **)&g->stage)) == INCA_OK)
            g->scratch_bytes += (int64_t)sizeof(float) * g->stage_rows * g->maxdim;
        const int64_t hm = cfg->halo_max > 0 ? cfg->halo_max : 1;
        for (int st = 0; st < ns && rc == INCA_OK; st++) {
            const int64_t d = g->dim[st];
            const int wantM = method == AGG_INCAGG && !(g->fixed[st] && g->m0s), wantS = wantM && !g->fixed[st], wantH = method == AGG_GAS && !g->fixed[st];
            const int push = wantH || (wantS && (g->single || g->P[st].data));
            if (push && (rc = pin(g, sizeof(float) * (size_t)(nbm * d), (void **)&g->push_h[st])))
                break;
            for (int k = 0; k < 2 && rc == INCA_OK; k++) {
                if (wantM && (!(g->rowsM[k][st] = scratch(g, nbm * d, "rows_M", 1)) ||
                              (rc = pin(g, sizeof(float) * (size_t)(nbm * d), (void **)&g->stM[k][st]))))
                    rc = rc ? rc : INCA_ENOMEM;
                if (rc == INCA_OK && wantS &&
                    (!(g->rowsS[k][st] = scratch(g, nbm * d, "rows_S", 1)) ||
                     (rc = pin(g, sizeof(float) * (size_t)(nbm * d), (void **)&g->stS[k][st]))))
                    rc = rc ? rc : INCA_ENOMEM;
                if (rc == INCA_OK && wantH &&
                    (!(g->rowsH[k][st] = scratch(g, hm * d, "rows_H", 1)) ||
                     (rc = pin(g, sizeof(float) * (size_t)(hm * d), (void **)&g->stH[k][st]))))
                    rc = rc ? rc : INCA_ENOMEM;
            }
        }
    }
    return rc;
}

/* GAS: held pushes of the ranks of one step, and the halo scratch. */
static int agg_gas_scratch(agg_t *g, const agg_config_t *cfg, int64_t nbm) {
    const int ns = cfg->nsites, method = cfg->method;
    int rc = INCA_OK;
    if (rc == INCA_OK && method == AGG_GAS && cfg->defer_batches > 0) {
        if (g->host_tables) rc = inca_fail(INCA_EINVAL, "gas: held pushes need the tables on the context (not --history-location host)");
        g->defer = cfg->defer_batches;
        g->ndmax = (int64_t)cfg->defer_batches * nbm;
        if (rc == INCA_OK && !(g->dids = take(g, sizeof(int64_t) * (size_t)g->ndmax, "held_ids", g->dev))) rc = INCA_ENOMEM;
        else if (rc == INCA_OK) {
            g->scratch_bytes += (int64_t)sizeof(int64_t) * g->ndmax;
            if (!g->dev) g->scratch_host_bytes += (int64_t)sizeof(int64_t) * g->ndmax;
        }
        for (int st = 0; st < ns && rc == INCA_OK; st++)
            if (!g->fixed[st] && !(g->dpush[st] = scratch(g, g->ndmax * g->dim[st], "held_pushes", g->dev))) rc = INCA_ENOMEM;
    }
    if (rc == INCA_OK && method == AGG_GAS) {
        int64_t w = g->maxdim > g->in_dim ? g->maxdim : g->in_dim;
        if (!(g->hbuf = scratch(g, (cfg->halo_max ? cfg->halo_max : 1) * w, "scratch_halo", g->dev))) rc = INCA_ENOMEM;
    }
    return rc;
}

/* The MPI rank's own rows of Â (incagg), then M^0 = ÂX once at every site that reads x. */
static int agg_rows_and_baselines(agg_t *g, const agg_config_t *cfg) {
    const int ns = cfg->nsites, method = cfg->method;
    int rc = INCA_OK;
    g->exchange = cfg->exchange;
    g->exchange_ctx = cfg->exchange_ctx;
    if (rc == INCA_OK && method == AGG_INCAGG && cfg->rows_hi > cfg->rows_lo) {
        if (cfg->rows_lo < 0 || cfg->rows_hi > g->n) rc = inca_fail(INCA_EINVAL, "aggregation operator: rows out of range");
        else rc = kc_mat_rows_view(g->tk, g->ta_m, cfg->rows_lo, cfg->rows_hi, &g->own_rows);
        g->rows_lo = cfg->rows_lo;
    }
    /* M^0 = ÂX once at every site that reads x */
    for (int s = 0; s < ns && rc == INCA_OK && method == AGG_INCAGG; s++)
        if (g->fixed[s] && !g->m0_borrowed && !g->m0s) rc = agg_baseline_compute(g, s, g->x_t, NULL);
    return rc;
}

int agg_create(const agg_config_t *cfg, agg_t **out) {
    *out = NULL;
    const int ns = cfg->nsites, method = cfg->method;
    int rc = agg_check_config(cfg);
    if (rc != INCA_OK) return rc;
    agg_t *g = inca_calloc(1, sizeof *g);
    if (!g) return INCA_ENOMEM;
    rc = mem_arena_create(&g->arena);
    if (rc != INCA_OK) { inca_free(g); return rc; }
    if ((cfg->spill_budget > 0 || cfg->spill_dir) && cfg->spill_budget >= 0 &&
        (rc = mem_arena_set_spill(g->arena, cfg->spill_budget, cfg->spill_dir)) != INCA_OK) {
        mem_arena_destroy(&g->arena);
        inca_free(g);
        return rc;
    }
    rc = agg_ctx_setup(g, cfg);
    /* the batch's matrices: views of the loader's on the CPU, uploads of this capacity off it */
    const int64_t nbm = cfg->nb_max > 0 ? cfg->nb_max : 1, nnzm = g->dev ? cfg->nnz_max : INT64_MAX / 4;
    g->nb_max = nbm;
    g->halo_max = cfg->halo_max > 0 ? cfg->halo_max : 0;
    const int64_t cols = nbm > cfg->halo_max ? nbm : cfg->halo_max;
    if (rc == INCA_OK) rc = agg_slots_create(g, cfg, nbm, nnzm, cols);
    if (rc != INCA_OK) { agg_free(&g); return rc; }
    g->method = method;
    g->source = cfg->source;
    g->relax = cfg->relax > 0 && cfg->relax < 1 && cfg->source == AGG_SRC_RECOMPUTE ? cfg->relax : 1.f;
    g->single = method == AGG_INCAGG && cfg->source == AGG_SRC_PUSH && cfg->single_buffer;
    g->nsites = ns;
    g->n = cfg->n;
    g->in_dim = cfg->in_dim;
    g->xtf = cfg->x_tf_dim > 0 ? cfg->x_tf_dim : 0;
    g->m0s = method == AGG_INCAGG && g->xtf > 0 ? cfg->m0_sparse : NULL;
    g->x = cfg->x;
    g->dtype = cfg->dtype;
    g->pass_dtype = cfg->pass_dtype == HIST_BF16 ? HIST_BF16 : HIST_F32;
    g->maxdim = 1;
    for (int s = 0; s < ns; s++) {
        g->dim[s] = cfg->dims[s];
        g->fixed[s] = cfg->fixed[s] ? 1 : 0;
        if (g->dim[s] > g->maxdim) g->maxdim = g->dim[s];
    }
    /* first, so that under a memory budget they take anonymous memory before the tables do: the
     * passes' SpMM reads them at random rows (every cut edge), a step reads a table at its
     * batch's few contiguous ranges, so spilling tables costs less I/O than spilling these */
    for (int i = 0; i < cfg->pass_buffers && i < 2 && cfg->pass_width > 0 && rc == INCA_OK; i++) {
        void *pb;
        rc = agg_pass_buffer(g, i, cfg->pass_width, &pb);
    }
    if (rc == INCA_OK && (rc = agg_tables_create(g, cfg)) == INCA_OK && (rc = agg_incagg_scratch(g, cfg)) == INCA_OK &&
        (rc = agg_slot_ids(g, cfg, nbm)) == INCA_OK && (rc = agg_host_stage(g, cfg, nbm)) == INCA_OK &&
        (rc = agg_gas_scratch(g, cfg, nbm)) == INCA_OK)
        rc = agg_rows_and_baselines(g, cfg);
    if (rc != INCA_OK) {
        agg_free(&g);
        return inca_fail_ctx(rc, "while allocating %s memory", agg_method_name(method));
    }
    *out = g;
    return INCA_OK;
}

int agg_pass_buffer(agg_t *g, int i, int64_t f, void **out) {
    if (i < 0 || i > 1 || f < 1) return inca_fail(INCA_EINVAL, "agg_pass_buffer: buffer %d of width %lld", i, (long long)f);
    if (g->pass[i] && f > g->pass_f[i])
        return inca_fail(INCA_EINVAL, "agg_pass_buffer: buffer %d was made %lld wide, asked for %lld", i, (long long)g->pass_f[i], (long long)f);
    if (!g->pass[i]) {
        const size_t bytes = (g->pass_dtype == HIST_BF16 ? 2 : 4) * (size_t)(g->n > 0 ? g->n : 1) * (size_t)f;
        const char *prev = kc_mem_tag(g->kc, "pass buffers");
        g->pass[i] = g->dev ? take(g, bytes, i ? "pass1" : "pass0", 1)
                            : mem_arena_alloc_spill(g->arena, bytes, i ? "pass1" : "pass0");
        kc_mem_tag(g->kc, prev);
        if (!g->pass[i]) return inca_fail_ctx(INCA_ENOMEM, "a layer-wise pass buffer of %zu bytes", bytes);
        g->pass_f[i] = f;
        g->table_bytes += (int64_t)bytes;
    }
    *out = g->pass[i];
    return INCA_OK;
}
