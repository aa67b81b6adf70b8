/*
 * The output of `edhoc-cli interop URI` (interop_output.c): the matrix of
 * src/tools/interop printed as a table, or as JSON
 * (docs/json/interop.schema.json).
 */
#ifndef CLI_INTEROP_OUTPUT_H
#define CLI_INTEROP_OUTPUT_H

#include <stdbool.h>

#include "interop_matrix.h"

struct interop_output_opts {
    bool json;            /* JSON on stdout instead of the table */
    const char *json_out; /* also that JSON into this file; NULL: none */
    bool quiet;
};

/* Print (and write to json_out) the matrix; returns the exit code: 0 no
 * cell failed, 1 some did, 3 no cell could be run or json_out not
 * written, 128 + the signal when interrupted. */
int interop_output_matrix(const struct interop_matrix_opts *o,
                          const struct interop_output_opts *out, const struct interop_matrix *m);

#endif
