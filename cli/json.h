/* A minimal JSON object writer for `--json` output and JSON Lines metrics: keys are added in
 * order, numbers printed with enough digits to round-trip. Tested in test_cli.c. */
#ifndef INCA_JSON_H
#define INCA_JSON_H
#include <stdint.h>
#include <stdio.h>

typedef struct json json_t;
int json_new(json_t **out);                 /* starts "{" */
void json_free(json_t **j);
void json_int(json_t *j, const char *key, int64_t v);
void json_num(json_t *j, const char *key, double v);   /* NaN/inf -> null */
void json_str(json_t *j, const char *key, const char *v);
void json_bool(json_t *j, const char *key, int v);
void json_raw(json_t *j, const char *key, const char *raw);  /* raw JSON value (array, object) */
/* Close the object and write it plus '\n' to f; returns INCA_ENOMEM if any append failed. */
int json_write(json_t *j, FILE *f);
/* The text so far (without the closing brace), for embedding with json_raw after json_close. */
const char *json_close(json_t *j);          /* closes "}" and returns the text */
#endif
