/* A mini-batch run's options' defaults, its figures' release, the model's sites (mb_config.h). */
#include "nn/mb_config.h"
#include "core/alloc.h"
#include "core/status.h"
#include "memory/agg.h"
#include <string.h>

void mb_opts_default(mb_opts_t *o) {
    memset(o, 0, sizeof *o);
    o->eval_every_epoch = 1;
    o->prefetch = 1;
    o->single_buffer = 1;
}

int64_t mb_x_tf_dim(const model_config_t *mc) {
    const int64_t fout = mc->layers == 1 ? mc->out_dim : mc->hidden;
    return mc->input_transform_first && mc->kind == NN_GCN && mc->in_dim > fout ? fout : 0;
}

int mb_model_sites(const model_config_t *mc, int64_t *dims, uint8_t *fixed) {
    const int ns = model_num_sites(mc);
    if (ns < 0 || ns > AGG_MAX_SITES)
        return inca_fail(INCA_EINVAL, "mini-batch training supports at most %d aggregation sites, model has %d", AGG_MAX_SITES, ns);
    for (int s = 0; s < ns; s++) {
        dims[s] = model_site_dim(mc, s);
        /* gcn/sage site 0 aggregates x itself (transform_first is off for these operators) */
        fixed[s] = s == 0 && (mc->kind == NN_GCN || mc->kind == NN_SAGE);
    }
    return ns;
}

void mb_stats_free(mb_stats_t *st) {
    if (!st) return;
    INCA_FREE(st->tables);
    st->ntables = 0;
}
