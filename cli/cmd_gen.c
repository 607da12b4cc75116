/* inca gen: owned by its issue; this file is replaced when that command lands. */
#include "cli/commands.h"
#include "core/status.h"

int cmd_gen(int argc, char **argv) {
    (void)argc; (void)argv;
    return inca_fail(INCA_ERR, "command 'gen' is not available in this build yet");
}
