#include <stdio.h>

#include "commands.h"
#include "util.h"

int cmd_bench(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "edhoc-cli bench: not built yet\n");
    return CLI_EXIT_INTERNAL;
}
