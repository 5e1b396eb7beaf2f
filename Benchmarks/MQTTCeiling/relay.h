// The floor of B4's path, as `restock-ceiling relay` runs it (relay.c).
#ifndef RESTOCK_CEILING_RELAY_H
#define RESTOCK_CEILING_RELAY_H

/// `restock-ceiling relay PORT FILE [TIMEOUT_SECONDS]`: runs until its standard input closes; returns the exit status.
int relay_main(int argc, char **argv);

#endif
