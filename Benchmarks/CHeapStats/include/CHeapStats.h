#ifndef CHEAPSTATS_H
#define CHEAPSTATS_H
#include <stddef.h>

/// Bytes malloc has handed out and not had back (glibc's mallinfo2().uordblks).
size_t heap_stats_bytes_in_use(void);

#endif
