/* Tests of graph/partition.c and `inca partition`: the permutation is a bijection, parts are
 * contiguous and stable, the edge cut is recomputed independently from perm + bounds, METIS
 * finds the one-edge cut of two joined cliques and beats random on a grid, k = 1 never calls
 * METIS, bad inputs are refused, the store round trip and reuse, failure injection. */
#include "testutil.h"
#include "core/alloc.h"
#include "core/status.h"
#include "graph/csr.h"
#include "graph/partition.h"
#include "graph/partition_par.h"
#include "loaders/partition_store.h"
#include "loaders/dataset.h"
#include "loaders/store.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* two 6-cliques {0..5} and {6..11} joined by the edge 2-9, with ids interleaved by a fixed
 * shuffle so the answer is not the identity */
static const int64_t relabel[12] = {7, 0, 11, 3, 5, 9, 1, 10, 2, 8, 4, 6};
static void two_cliques(csr_t *g) {
    int64_t s[80], d[80], m = 0;
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < 6; i++)
            for (int j = i + 1; j < 6; j++) { s[m] = relabel[6 * c + i]; d[m] = relabel[6 * c + j]; m++; }
    s[m] = relabel[2]; d[m] = relabel[9]; m++;
    ck_assert_int_eq(csr_from_edges(g, 12, s, d, m, CSR_SYMMETRIZE), INCA_OK);
}

/* Checks the structural invariants and returns the edge cut recomputed from perm + bounds. */
static int64_t check_partition(const csr_t *g, const partition_t *p) {
    int64_t n = g->n_rows;
    ck_assert_int_eq(p->n, n);
    ck_assert_int_eq(p->bounds[0], 0);
    ck_assert_int_eq(p->bounds[p->k], n);
    for (int64_t q = 0; q < p->k; q++) ck_assert_int_le(p->bounds[q], p->bounds[q + 1]);
    char *seen = calloc((size_t)n, 1);
    int64_t *part_of = malloc(sizeof *part_of * (size_t)n), *inv = malloc(sizeof *inv * (size_t)n);
    for (int64_t v = 0; v < n; v++) {
        ck_assert(p->perm[v] >= 0 && p->perm[v] < n);
        ck_assert_msg(!seen[p->perm[v]], "new id %lld used twice", (long long)p->perm[v]);
        seen[p->perm[v]] = 1;
        inv[p->perm[v]] = v;
        int64_t q = 0;
        while (!(p->bounds[q] <= p->perm[v] && p->perm[v] < p->bounds[q + 1])) q++;
        part_of[v] = q;
    }
    /* stable within a part: old ids ascend along each contiguous range */
    for (int64_t q = 0; q < p->k; q++)
        for (int64_t i = p->bounds[q] + 1; i < p->bounds[q + 1]; i++) ck_assert_int_lt(inv[i - 1], inv[i]);
    int64_t cut = 0;
    for (int64_t u = 0; u < n; u++)
        for (int64_t e = g->rowptr[u]; e < g->rowptr[u + 1]; e++)
            if (u < g->col[e] && part_of[u] != part_of[g->col[e]]) cut++;
    free(seen);
    free(part_of);
    free(inv);
    return cut;
}

START_TEST(metis_two_cliques) {
    csr_t g = {0};
    two_cliques(&g);
    partition_t p;
    ck_assert_int_eq(partition_compute(&g, 2, PART_METIS, 0, &p), INCA_OK);
    ck_assert_int_eq(check_partition(&g, &p), 1);
    ck_assert_int_eq(p.man.edge_cut, 1);
    ck_assert_int_eq(p.man.min_part, 6);
    ck_assert_int_eq(p.man.max_part, 6);
    ck_assert_str_eq(p.man.name, "metis-2-s0");
    ck_assert_str_eq(p.man.method, "metis");
    /* the two cliques land in different parts */
    int64_t first = p.perm[relabel[0]] < 6;
    for (int i = 0; i < 6; i++) ck_assert_int_eq(p.perm[relabel[i]] < 6, first);
    for (int i = 6; i < 12; i++) ck_assert_int_eq(p.perm[relabel[i]] < 6, !first);
    partition_free(&p);
    csr_free(&g);
}
END_TEST

START_TEST(grid_metis_vs_random) {
    csr_t g = {0};
    tu_grid(&g, 24);
    partition_t pm, pr;
    ck_assert_int_eq(partition_compute(&g, 8, PART_METIS, 3, &pm), INCA_OK);
    ck_assert_int_eq(partition_compute(&g, 8, PART_RANDOM, 3, &pr), INCA_OK);
    int64_t cm = check_partition(&g, &pm), cr = check_partition(&g, &pr);
    ck_assert_int_eq(cm, pm.man.edge_cut);
    ck_assert_int_eq(cr, pr.man.edge_cut);
    /* random balanced parts: sizes 72 each; cut ~ 7/8 of 1104 edges; METIS far below */
    ck_assert_int_eq(pr.man.min_part, 72);
    ck_assert_int_eq(pr.man.max_part, 72);
    ck_assert_int_gt(cr, 800);
    ck_assert_int_lt(cm, 250);
    /* METIS is deterministic for a fixed seed */
    partition_t pm2;
    ck_assert_int_eq(partition_compute(&g, 8, PART_METIS, 3, &pm2), INCA_OK);
    ck_assert_mem_eq(pm.perm, pm2.perm, sizeof(int64_t) * (size_t)g.n_rows);
    partition_free(&pm);
    partition_free(&pm2);
    partition_free(&pr);
    csr_free(&g);
}
END_TEST

START_TEST(one_part_and_bad_inputs) {
    csr_t g = {0};
    tu_grid(&g, 5);
    partition_t p;
    ck_assert_int_eq(partition_compute(&g, 1, PART_METIS, 0, &p), INCA_OK);
    ck_assert_int_eq(check_partition(&g, &p), 0);
    for (int64_t v = 0; v < 25; v++) ck_assert_int_eq(p.perm[v], v);
    partition_free(&p);
    ck_assert_int_eq(partition_compute(&g, 0, PART_METIS, 0, &p), INCA_EINVAL);
    ck_assert_int_eq(partition_compute(&g, 26, PART_RANDOM, 0, &p), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "--parts"));
    csr_free(&g);
    /* a directed (non-symmetric) graph is refused by the METIS path */
    int64_t s[3] = {0, 1, 2}, d[3] = {1, 2, 3};
    ck_assert_int_eq(csr_from_edges(&g, 4, s, d, 3, 0), INCA_OK);
    ck_assert_int_eq(partition_compute(&g, 2, PART_METIS, 0, &p), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "symmetric"));
    csr_free(&g);
    int m;
    ck_assert_int_eq(partition_method_parse("kahip", &m), INCA_EINVAL);
}
END_TEST

START_TEST(alloc_failures) {
    csr_t g = {0};
    tu_grid(&g, 10);
    for (long i = 1; i < 40; i++) {
        partition_t p;
        inca_alloc_fail_after(i);
        int rc = partition_compute(&g, 4, i % 2 ? PART_METIS : PART_RANDOM, 1, &p);
        inca_alloc_fail_after(0);
        if (rc == INCA_OK) { check_partition(&g, &p); partition_free(&p); }
        else ck_assert_int_eq(rc, INCA_ENOMEM);
    }
    csr_free(&g);
}
END_TEST

static char *make_store(const char *dir, int side) {
    dataset_t d;
    dataset_init(&d);
    tu_grid(&d.adj, side);
    d.n = (int64_t)side * side;
    d.f = 2;
    d.c = 2;
    d.x = inca_calloc((size_t)(d.n * d.f), sizeof(float));
    d.y = inca_calloc((size_t)d.n, sizeof(int32_t));
    char *path = NULL;
    ck_assert_int_ge(asprintf(&path, "%s/g", dir), 0);
    ck_assert_int_eq(dataset_save(&d, path, 0), INCA_OK);
    dataset_free(&d);
    return path;
}

START_TEST(store_round_trip) {
    char *dir = tu_mkdtemp(), *path = make_store(dir, 12);
    store_t *s = NULL;
    ck_assert_int_eq(store_open(path, STORE_RDWR, &s), INCA_OK);
    csr_t g = {0};
    tu_grid(&g, 12);
    partition_t a, b;
    int reused = -1;
    ck_assert_int_eq(store_partition_get(s, &g, 6, PART_METIS, 0, &a, &reused), INCA_OK);
    ck_assert_int_eq(reused, 0);
    ck_assert_int_eq(store_partition_get(s, &g, 6, PART_METIS, 0, &b, &reused), INCA_OK);
    ck_assert_int_eq(reused, 1);
    ck_assert_mem_eq(a.perm, b.perm, sizeof(int64_t) * 144);
    ck_assert_mem_eq(a.bounds, b.bounds, sizeof(int64_t) * 7);
    ck_assert_int_eq(a.man.edge_cut, b.man.edge_cut);
    ck_assert_int_eq(check_partition(&g, &b), b.man.edge_cut);
    partition_free(&a);
    partition_free(&b);
    ck_assert_int_eq(store_partition_load(s, "metis-7-s0", &a), INCA_ENOTFOUND);
    store_close(&s);
    csr_free(&g);
    tu_rmrf(dir);
    free(dir);
    free(path);
}
END_TEST

/* A stored partitioning whose perm is not a permutation, or whose bounds decrease, is refused
 * on load with the array and entry named (a damaged store must not index out of range later);
 * so are bounds that stop short of n and a perm array longer than the manifest's node count. */
START_TEST(store_damaged_partition_refused) {
    char *dir = tu_mkdtemp(), *path = make_store(dir, 12);
    store_t *s = NULL;
    ck_assert_int_eq(store_open(path, STORE_RDWR, &s), INCA_OK);
    csr_t g = {0};
    tu_grid(&g, 12);
    partition_t a;
    ck_assert_int_eq(store_partition_get(s, &g, 6, PART_METIS, 0, &a, NULL), INCA_OK);
    for (int damage = 0; damage < 5; damage++) {
        partition_t bad = a, got;
        int64_t perm[145], bounds[7];
        memcpy(perm, a.perm, sizeof(int64_t) * 144);
        memcpy(bounds, a.bounds, sizeof bounds);
        bad.perm = perm;
        bad.bounds = bounds;
        const char *want = NULL;
        if (damage == 0) { perm[5] = perm[6]; want = "not a permutation"; }
        else if (damage == 1) { perm[7] = 144; want = "outside [0, 144)"; }
        else if (damage == 2) { int64_t t = bounds[2]; bounds[2] = bounds[3]; bounds[3] = t; want = "decreases"; }
        else if (damage == 3) { bounds[6] = 143; want = "bounds must run from 0 to 144"; }   /* node 143 in no part */
        else { perm[144] = 144; bad.n = 145; want = "145 entries, expected 144"; }   /* perm longer than the nodes */
        ck_assert_int_eq(store_partition_save(s, &bad), INCA_OK);
        ck_assert_int_eq(store_partition_load(s, a.man.name, &got), INCA_EINVAL);
        ck_assert_msg(strstr(inca_errmsg(), want) != NULL, "damage %d: %s", damage, inca_errmsg());
        inca_err_clear();
    }
    partition_free(&a);
    store_close(&s);
    csr_free(&g);
    tu_rmrf(dir);
    free(dir);
    free(path);
}
END_TEST

START_TEST(cli_partition) {
    char *dir = tu_mkdtemp(), *path = make_store(dir, 16);
    char args[512], *out = NULL, *err = NULL;
    snprintf(args, sizeof args, "partition '%s' --parts 4 --json", path);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    const char *j = tu_last_line(out);
    double cut = tu_json_num(j, "edge_cut");
    /* a 16x16 grid in 4 parts: the best cut is 32 (quadrants or strips); METIS gets close */
    ck_assert(cut >= 32 && cut <= 48);
    ck_assert_double_eq(tu_json_num(j, "parts"), 4);
    ck_assert_ptr_nonnull(strstr(j, "\"reused\":false"));
    free(out);
    free(err);
    ck_assert_int_eq(tu_inca(args, &out, &err), 0);
    ck_assert_ptr_nonnull(strstr(tu_last_line(out), "\"reused\":true"));
    ck_assert_double_eq(tu_json_num(tu_last_line(out), "edge_cut"), cut);
    free(out);
    free(err);
    snprintf(args, sizeof args, "partition '%s' --parts 4 --method kahip", path);
    ck_assert_int_eq(tu_inca(args, &out, &err), 2);
    ck_assert_ptr_nonnull(strstr(err, "--method"));
    free(out);
    free(err);
    snprintf(args, sizeof args, "partition '%s' --parts 1000", path);
    ck_assert_int_eq(tu_inca(args, &out, &err), 2);
    free(out);
    free(err);
    tu_rmrf(dir);
    free(dir);
    free(path);
}
END_TEST

/* Stored names and method words round trip; anything else is refused naming the text */
START_TEST(partition_names) {
    static const struct { const char *s; int ok, method; int64_t k; uint64_t seed; int ranks; } cases[] = {
        {"metis-40-s0", 1, PART_METIS, 40, 0, 0}, {"random-7-s12", 1, PART_RANDOM, 7, 12, 0},
        {"parmetis-256-s3", 1, PART_PARMETIS, 256, 3, 0}, {"parmetis-256-s3-r2", 1, PART_PARMETIS, 256, 3, 2},
        {"parmetis-8-s1-r16", 1, PART_PARMETIS, 8, 1, 16}, {"metis", 1, PART_METIS, 0, 0, 0},
        {"parmetis", 1, PART_PARMETIS, 0, 0, 0}, {"metis-4-s0-r2", 0, 0, 0, 0, 0}, {"parmetis-4-s0-r0", 0, 0, 0, 0, 0},
        {"parmetis-4-s0-r", 0, 0, 0, 0, 0}, {"parmetis-4-s0-r2x", 0, 0, 0, 0, 0}, {"parmetis-4-s0-r-2", 0, 0, 0, 0, 0},
        {"metis-0-s0", 0, 0, 0, 0, 0}, {"metis--4-s0", 0, 0, 0, 0, 0}, {"metis-4-s", 0, 0, 0, 0, 0},
        {"metis-4-s-1", 0, 0, 0, 0, 0}, {"metis-4-s0x", 0, 0, 0, 0, 0}, {"kahip-4-s0", 0, 0, 0, 0, 0},
        {"metis-4", 0, 0, 0, 0, 0}, {"", 0, 0, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int m = -1;
        int64_t k = -1;
        uint64_t seed = 99;
        int ranks = -1;
        const int rc = partition_name_parse(cases[i].s, &m, &k, &seed, &ranks);
        ck_assert_msg((rc == INCA_OK) == cases[i].ok, "'%s': rc %d", cases[i].s, rc);
        if (!cases[i].ok) {
            ck_assert_msg(strstr(inca_errmsg(), "--partition") != NULL, "%s", inca_errmsg());
            inca_err_clear();
            continue;
        }
        ck_assert_int_eq(m, cases[i].method);
        ck_assert_int_eq(k, cases[i].k);
        ck_assert_uint_eq(seed, cases[i].seed);
        ck_assert_int_eq(ranks, cases[i].ranks);
        if (k > 0) {
            char back[64];
            partition_name(back, sizeof back, m, k, seed, ranks);
            ck_assert_str_eq(back, cases[i].s);
        }
    }
}
END_TEST

/* ParMETIS runs over MPI ranks only: partition_assign refuses it, and without a launcher the
 * distributed entry point says so (after checking the slices, which tile [0, n) here) */
START_TEST(parmetis_needs_ranks) {
    csr_t g = {0};
    tu_grid(&g, 8);
    int32_t part[64];
    ck_assert_int_eq(partition_assign(&g, 4, PART_PARMETIS, 0, part, NULL), INCA_EINVAL);
    ck_assert_ptr_nonnull(strstr(inca_errmsg(), "--ranks"));
    inca_err_clear();
    partition_t p;
    const int rc = partition_par_compute(NULL, &g, 0, 64, 4, 0, &p);
    ck_assert_int_eq(rc, INCA_EINVAL);
    ck_assert_msg(strstr(inca_errmsg(), partition_par_available() ? "MPI launcher" : "without PT-Scotch") != NULL, "%s",
                  inca_errmsg());
    inca_err_clear();
    ck_assert_int_eq(partition_par_compute(NULL, &g, 0, 65, 4, 0, &p), INCA_EINVAL);   /* rows end at 64 */
    inca_err_clear();
    if (partition_par_available()) {   /* rows that end at n but start past 0: refused as not tiling [0, n) */
        ck_assert_int_eq(partition_par_compute(NULL, &g, 1, 65, 4, 0, &p), INCA_EINVAL);
        ck_assert_msg(strstr(inca_errmsg(), "rank 0 holds rows from 1 (64 rows), expected from 0"), "%s", inca_errmsg());
        inca_err_clear();
    }
    csr_free(&g);
}
END_TEST

/* A rank's rows of the stored graph, read alone, are the same rows of the whole graph */
START_TEST(store_rows_slice) {
    char *dir = tu_mkdtemp(), *path = make_store(dir, 9);
    store_t *s = NULL;
    ck_assert_int_eq(store_open(path, STORE_RDONLY, &s), INCA_OK);
    csr_t all = {0};
    ck_assert_int_eq(dataset_load_adj(s, &all), INCA_OK);
    const int64_t cuts[][2] = {{0, 81}, {0, 0}, {10, 11}, {20, 57}, {80, 81}, {81, 81}};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        csr_t sl = {0};
        int64_t n = 0, r0 = cuts[c][0], r1 = cuts[c][1];
        ck_assert_int_eq(dataset_load_adj_rows(s, r0, r1, &n, &sl), INCA_OK);
        ck_assert_int_eq(n, 81);
        ck_assert_int_eq(sl.n_rows, r1 - r0);
        ck_assert_int_eq(sl.n_cols, 81);
        ck_assert_int_eq(sl.nnz, all.rowptr[r1] - all.rowptr[r0]);
        for (int64_t i = 0; i <= r1 - r0; i++) ck_assert_int_eq(sl.rowptr[i], all.rowptr[r0 + i] - all.rowptr[r0]);
        if (sl.nnz) ck_assert_mem_eq(sl.col, all.col + all.rowptr[r0], sizeof *sl.col * (size_t)sl.nnz);
        csr_free(&sl);
    }
    csr_t sl = {0};
    int64_t n = 0;
    ck_assert_int_eq(dataset_load_adj_rows(s, 5, 82, &n, &sl), INCA_EINVAL);
    ck_assert_int_eq(dataset_load_adj_rows(s, 6, 5, &n, &sl), INCA_EINVAL);
    inca_err_clear();
    csr_free(&all);
    store_close(&s);
    tu_rmrf(dir);
    free(dir);
    free(path);
}
END_TEST

int main(void) {
    Suite *s = suite_create("partition");
    TCase *t = tcase_create("core");
    tcase_add_test(t, metis_two_cliques);
    tcase_add_test(t, grid_metis_vs_random);
    tcase_add_test(t, one_part_and_bad_inputs);
    tcase_add_test(t, alloc_failures);
    tcase_add_test(t, store_round_trip);
    tcase_add_test(t, store_damaged_partition_refused);
    tcase_add_test(t, cli_partition);
    tcase_add_test(t, partition_names);
    tcase_add_test(t, parmetis_needs_ranks);
    tcase_add_test(t, store_rows_slice);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
