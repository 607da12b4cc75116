/* Benchmarks behind `inca bench <name>`: each prints JSON Lines or one JSON object with ratios
 * against a baseline measured in the same process (machines here are shared and noisy). */
#ifndef INCA_BENCH_H
#define INCA_BENCH_H
int bench_spmm(int argc, char **argv);      /* SpMM GB/s vs copy and random-gather bounds */
int bench_gen(int argc, char **argv);       /* generate + ingest a large graph: time, peak RSS */
int bench_loader(int argc, char **argv);    /* prefetching loader: trainer wait fraction */
int bench_epoch(int argc, char **argv);     /* GAS vs IncAgg epoch time and accuracy */
/* bench epoch --breakdown (bench_breakdown.c): each of the methods named, every op timed by kind
 * against its floor; after bench_epoch loaded d and p */
struct dataset;
struct partition;
struct train_config;
int bench_epoch_breakdown(const struct dataset *d, struct train_config *c, const struct partition *p, const char *methods,
                          int json);
int bench_pruning(int argc, char **argv);   /* time per pruning stage */
int bench_knn(int argc, char **argv);       /* exact kNN vs FAISS: time and recall@k */
/* data-parallel scaling over MPI (bench_scale.c): run by the processes of one mpirun job */
struct comm;
int bench_scale(int argc, char **argv, struct comm *world);
/* the largest --ranks entry of argv (1 without one); INCA_EINVAL for a bad list */
int bench_scale_max_ranks(int argc, char **argv, int *maxp);
#endif
