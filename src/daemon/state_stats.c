#include "state_stats.h"

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATS_MAGIC "edhoc-cli state writer v1"

int cli_state_stats_publish(const char *dir, const struct cli_state_stats *s)
{
    char path[PATH_MAX], tmp[PATH_MAX + 8], text[1024];
    if (snprintf(path, sizeof path, "%s/%s", dir, EDHOC_STATE_STATS_FILE) >= (int)sizeof path)
        return -1;
    snprintf(tmp, sizeof tmp, "%s.new", path);
    const struct edhoc_state_writer_stats *w = &s->w;
    int n = snprintf(text, sizeof text,
                     STATS_MAGIC "\npid %ld\nuptime_ms %.0f\ncommits %" PRIu64 "\nrows %" PRIu64
                                 "\nfailed_commits %" PRIu64 "\nfailed_rows %" PRIu64
                                 "\nlargest_batch %" PRIu64 "\nclosed_by_size %" PRIu64
                                 "\nclosed_by_time %" PRIu64 "\nclosed_by_wait %" PRIu64
                                 "\nwaits %" PRIu64 "\nqueued %" PRIu64 "\n",
                     s->pid, s->uptime_s * 1000, w->commits, w->rows, w->failed_commits,
                     w->failed_rows, w->largest_batch, w->closed_by_size, w->closed_by_time,
                     w->closed_by_wait, w->waits, w->queued);
    if (s->fleet && n > 0 && (size_t)n < sizeof text)
        n += snprintf(
            text + n, sizeof text - (size_t)n,
            "store postgresql\nround_trips %" PRIu64 "\nrows_put %" PRIu64 "\nhandshakes %" PRIu64
            "\nserving_round_trips %" PRIu64 "\noscore_requests %" PRIu64 "\n",
            s->round_trips, s->rows_put, s->handshakes, s->serving_round_trips, s->oscore_requests);
    unlink(tmp);
    int fd = open(tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -1;
    bool ok = fchmod(fd, 0600) == 0 && write(fd, text, (size_t)n) == n;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

bool cli_state_stats_read(const char *path, struct cli_state_stats *s)
{
    memset(s, 0, sizeof *s);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    char line[160];
    bool ours = fgets(line, sizeof line, f) && !strcmp(line, STATS_MAGIC "\n");
    while (ours && fgets(line, sizeof line, f)) {
        char key[40];
        double v = 0;
        if (sscanf(line, "%39s %lf", key, &v) != 2)
            continue;
        struct {
            const char *name;
            uint64_t *field;
        } fields[] = {{"commits", &s->w.commits},
                      {"rows", &s->w.rows},
                      {"failed_commits", &s->w.failed_commits},
                      {"failed_rows", &s->w.failed_rows},
                      {"largest_batch", &s->w.largest_batch},
                      {"closed_by_size", &s->w.closed_by_size},
                      {"closed_by_time", &s->w.closed_by_time},
                      {"closed_by_wait", &s->w.closed_by_wait},
                      {"waits", &s->w.waits},
                      {"queued", &s->w.queued},
                      {"round_trips", &s->round_trips},
                      {"rows_put", &s->rows_put},
                      {"handshakes", &s->handshakes},
                      {"serving_round_trips", &s->serving_round_trips},
                      {"oscore_requests", &s->oscore_requests}};
        if (!strcmp(key, "round_trips"))
            s->fleet = true;
        if (!strcmp(key, "pid"))
            s->pid = (long)v;
        else if (!strcmp(key, "uptime_ms"))
            s->uptime_s = v / 1000;
        for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
            if (!strcmp(key, fields[i].name))
                *fields[i].field = (uint64_t)v;
        }
    }
    fclose(f);
    return ours && s->pid > 0;
}
