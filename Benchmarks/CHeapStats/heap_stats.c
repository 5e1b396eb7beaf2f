#include <malloc.h>
#include "CHeapStats.h"

size_t heap_stats_bytes_in_use(void) {
    return mallinfo2().uordblks;
}
