/* Every flag a command's parser accepts (`inca CMD --list-flags`) is named in its --help (or,
 * where the help says so, in train's or prune's, whose flags predict and bench pruning take),
 * and the README's flags reference is exactly what scripts/flags_reference.sh makes of the
 * --help texts, so neither can fall behind the code; progress lines appear on a terminal only
 * (under script(1)), never on a pipe or with --quiet. */
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "--flag" as a whole word in text */
static int names(const char *text, const char *flag) {
    const size_t n = strlen(flag);
    for (const char *p = strstr(text, flag); p; p = strstr(p + 1, flag)) {
        const char c = p[n];
        const int before_ok = p == text || !(p[-1] == '-' || (p[-1] >= 'a' && p[-1] <= 'z'));
        if (before_ok && !(c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
            return 1;
    }
    return 0;
}

static char *run(const char *args) {
    char *out = NULL, *err = NULL;
    ck_assert_msg(tu_inca(args, &out, &err) == 0, "inca %s: %s", args, err ? err : "");
    free(err);
    return out;
}

START_TEST(every_flag_in_help) {
    static const char *const cmds[] = {"ingest", "gen", "info", "verify", "partition", "train", "predict", "export",
                                       "shard", "prune", "bench spmm", "bench gen", "bench loader", "bench epoch",
                                       "bench pruning", "bench scale"};
    char *train = run("train --help"), *prune = run("prune --help");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char args[128];
        snprintf(args, sizeof args, "%s --list-flags", cmds[i]);
        char *flags = run(args);
        snprintf(args, sizeof args, "%.*s --help", (int)strcspn(cmds[i], " "), cmds[i]);
        char *help = run(args);
        const int via_train = strstr(help, "train's flags") != NULL, via_prune = strstr(help, "prune's flags") != NULL;
        int n = 0;
        for (char *line = strtok(flags, "\n"); line; line = strtok(NULL, "\n"), n++) {
            line[strcspn(line, " ")] = '\0';
            ck_assert_msg(names(help, line) || (via_train && names(train, line)) || (via_prune && names(prune, line)),
                          "inca %s accepts %s, which its --help does not name", cmds[i], line);
        }
        ck_assert_msg(n > 0, "inca %s lists no flags", cmds[i]);
        free(flags);
        free(help);
    }
    free(train);
    free(prune);
}
END_TEST

START_TEST(readme_flags_reference_is_current) {
    char cmd[4096], readme[1100];
    snprintf(cmd, sizeof cmd, "bash '%s/scripts/flags_reference.sh' '%s'", tu_src(), tu_bin());
    char *want = NULL;
    ck_assert_int_eq(tu_sh(cmd, &want, NULL), 0);
    snprintf(readme, sizeof readme, "%s/README.md", tu_src());
    FILE *f = fopen(readme, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    const long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)len + 1);
    ck_assert_uint_eq(fread(text, 1, (size_t)len, f), (size_t)len);
    text[len] = '\0';
    fclose(f);
    const char *b = strstr(text, "<!-- flags:begin -->\n"), *e = strstr(text, "<!-- flags:end -->");
    ck_assert_msg(b && e && e > b, "README.md: no <!-- flags:begin --> ... <!-- flags:end --> section");
    b += strlen("<!-- flags:begin -->\n");
    const size_t got = (size_t)(e - b);
    ck_assert_msg(got == strlen(want) && memcmp(b, want, got) == 0,
                  "README.md's flags reference differs from the --help texts: run python3 "
                  "scripts/update_flags_reference.py");
    free(text);
    free(want);
}
END_TEST

/* The defaults `inca train --help` gives in brackets ("--dropout P [0.5]") are the values a run
 * without the flag records in its config: read from the help text, not from the code. */
START_TEST(train_help_defaults_are_the_config) {
    static const struct { const char *flag, *key; } d[] = {
        {"--layers", "layers"},   {"--hidden", "hidden"},         {"--dropout", "dropout"},   {"--lr", "lr"},
        {"--weight-decay", "weight-decay"}, {"--alpha", "alpha"}, {"--theta", "theta"},       {"--K", "K"},
        {"--patience", "patience"}, {"--eval-every", "eval-every"}, {"--parts", "parts"},     {"--batch-parts", "batch-parts"},
        {"--refresh", "refresh"}, {"--refresh-relax", "refresh-relax"}, {"--runs", "runs"},
    };
    char *help = run("train --help");
    char *dir = tu_mkdtemp(), args[8192];
    snprintf(args, sizeof args, "gen --kind csbm --nodes 300 --avg-degree 4 --features 6 --classes 3 --out '%s/g.lmdb' --quiet",
             dir);
    free(run(args));
    snprintf(args, sizeof args, "train '%s/g.lmdb' --epochs 1 --threads 1 --quiet --json", dir);
    char *out = run(args);
    cJSON *o = tu_json_last(out);
    const cJSON *cfg = tu_json_get(o, "config", cJSON_Object);
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
        /* the flag's first mention as a whole word, then its "[default" before any other flag */
        const char *p = help;
        const size_t n = strlen(d[i].flag);
        while ((p = strstr(p, d[i].flag)) && (p[n] != ' ' || p[-1] != ' ')) p += n;
        ck_assert_msg(p != NULL, "train --help does not name %s", d[i].flag);
        const char *b = strchr(p + n, '['), *next = strstr(p + n, " --");
        ck_assert_msg(b && (!next || b < next), "train --help gives %s no default in brackets", d[i].flag);
        char *end = NULL;
        const double want = strtod(b + 1, &end);
        ck_assert_msg(end > b + 1, "train --help: %s's default '%.12s' is no number", d[i].flag, b + 1);
        ck_assert_msg(tu_json_dbl(cfg, d[i].key) == want, "%s: the config says %.17g, train --help [%g]", d[i].flag,
                      tu_json_dbl(cfg, d[i].key), want);
    }
    cJSON_Delete(o);
    free(out);
    free(help);
    tu_rmrf(dir);
    free(dir);
}
END_TEST

/* a carriage return that rewrites a line (a terminal turns every "\n" into "\r\n") */
static int rewrites(const char *text) {
    for (size_t i = 0; text[i]; i++)
        if (text[i] == '\r' && text[i + 1] != '\n') return 1;
    return 0;
}

/* `inca <args>` under a pseudo-terminal (script(1): stderr is a terminal there); its output */
static char *under_pty(const char *args) {
    char cmd[16384], *out = NULL;
    snprintf(cmd, sizeof cmd, "script -qfec \"'%s' %s\" /dev/null", tu_bin(), args);
    ck_assert_msg(tu_sh(cmd, &out, NULL) == 0, "under a terminal: inca %s failed: %s", args, out ? out : "");
    return out;
}

/* Progress: one line rewritten in place (carriage returns) on a terminal, for ingest, gen,
 * partition, train and the benchmarks; nothing on a pipe; nothing with --quiet. */
START_TEST(progress_only_on_a_terminal) {
    char *dir = tu_mkdtemp(), args[8192], *out = NULL, *err = NULL;
    static const char *const steps[][2] = {
        {"ingest --format ogb '%1$s/data/cora' --out '%2$s/c.lmdb' --force", "ingest: "},
        {"gen --kind csbm --nodes 2000 --avg-degree 5 --out '%2$s/g.lmdb' --force", "gen: "},
        {"partition '%2$s/c.lmdb' --parts 8", "partition: "},
        {"partition '%2$s/c.lmdb' --parts 8 --method lp", "partition: label propagation into 8 parts: refining (round 1 of"},
        {"train '%2$s/c.lmdb' --epochs 5 --threads 1", "epoch 5/5"},
        {"bench epoch '%2$s/c.lmdb' --parts 8 --batch-parts 4 --epochs 2 --methods gas --eval-each-epoch", "\rbench epoch: gas"},
        {"bench spmm --nodes 2000 --avg-degree 4 --features 8 --reps 2 --parts 4", "\rbench spmm: metis order"},
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        snprintf(args, sizeof args, steps[i][0], tu_src(), dir);
        char *tty = under_pty(args);
        ck_assert_msg(rewrites(tty) && strstr(tty, steps[i][1]), "inca %s on a terminal showed no progress: %s", args,
                      tty);
        free(tty);
        ck_assert_int_eq(tu_inca(args, &out, &err), 0);   /* a pipe */
        ck_assert_msg(!rewrites(err) && !strstr(err, steps[i][1]), "inca %s wrote progress to a pipe: %s", args, err);
        free(out);
        free(err);
        strcat(args, " --quiet");
        tty = under_pty(args);
        ck_assert_msg(!rewrites(tty), "inca %s showed progress: %s", args, tty);
        free(tty);
    }
    tu_rmrf(dir);
    free(dir);
}
END_TEST

int main(void) {
    Suite *s = suite_create("e2e_help");
    TCase *t = tcase_create("help");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, every_flag_in_help);
    tcase_add_test(t, readme_flags_reference_is_current);
    tcase_add_test(t, train_help_defaults_are_the_config);
    tcase_add_test(t, progress_only_on_a_terminal);
    suite_add_tcase(s, t);
    return tu_run_suite(s);
}
