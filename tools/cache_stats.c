/* cache_stats.c: `make cache-stats`, the disk cache's statistics as `ccache -s`
 * prints them (uopc/src/cache_stats.c; section 23.6, "The cache on disk").
 * It reads the cache that the runtime would use in this environment and
 * creates nothing: on a fresh clone it reports a cache not created yet. */
#include <stdio.h>
#include <stdlib.h>
#include "../uopc/src/internal.h"

int main(void) {
  char dir[PATH_MAX];
  int64_t max_size;
  uopc_error err = {0};
  if (uopc_cache_resolve(NULL, dir, &err) != UOPC_OK || uopc_cache_max_size(&max_size, &err) != UOPC_OK) {
    fprintf(stderr, "cache-stats: %s\n", err.message);
    return 2;
  }
  const char *own = getenv("UOPC_CACHE_DIR");   /* unset or empty: dir is the shared default */
  uopc_cache_stats_print(stdout, "", dir, max_size, !(own && *own));
  return 0;
}
