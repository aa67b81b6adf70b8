/* What `edhoc-cli --version` (and every command's --version) prints. */
#ifndef CLI_VERSION_H
#define CLI_VERSION_H

#include <stdio.h>

/* "edhoc-cli VERSION", then the libraries in use as NAME/VERSION. */
void cli_print_version(FILE *f);

#endif
