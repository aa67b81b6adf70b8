#include <stdio.h>

#include "commands.h"
#include "util.h"

int cmd_interop(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "edhoc-cli interop: not built yet\n");
    return CLI_EXIT_INTERNAL;
}
