/* The library's version (edhoc/version.h). */
#include "edhoc/version.h"

const char *edhoc_version(void)
{
    return EDHOC_VERSION_STRING;
}
