/* inca prune: owned by its issue; this file is replaced when that command lands. */
#include "cli/commands.h"
#include "core/status.h"

int cmd_prune(int argc, char **argv) {
    (void)argc; (void)argv;
    return inca_fail(INCA_ERR, "command 'prune' is not available in this build yet");
}
