/* inspect/procid.c — a process's start time and uids from /proc (procid.h).
 *
 * Owns nothing; must not allocate or know about regions: the writer
 * (core/telemetry.c, inside dynamo._C) and the reader (inspect/reader.c)
 * both call it, so that the start time they compare is parsed one way.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* O_CLOEXEC under -std=c11 (the extension build) */
#endif
#include "procid.h"

#include <errno.h>      /* errno */
#include <fcntl.h>      /* open */
#include <stdio.h>      /* snprintf */
#include <stdlib.h>     /* strtoull */
#include <string.h>     /* strrchr, strstr */
#include <unistd.h>     /* read, close */

/* The text of /proc/<pid>/<name> (pid 0: self) into buf, NUL-terminated.
 * Bytes read, or -1 with errno. */
static ssize_t read_proc(pid_t pid, const char *name, char *buf, size_t cap)
{
    char path[64];
    if (pid > 0)
        snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
    else
        snprintf(path, sizeof path, "/proc/self/%s", name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = 0;
    ssize_t n;
    while (len + 1 < cap && (n = read(fd, buf + len, cap - 1 - len)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int saved = errno;
            close(fd);
            errno = saved;
            return -1;
        }
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    return (ssize_t)len;
}

int procid_start(pid_t pid, uint64_t *ticks)
{
    char buf[1024];
    if (read_proc(pid, "stat", buf, sizeof buf) < 0)
        return -1;
    /* "pid (comm) state ppid ...": comm may hold spaces and ')', so the
     * fields start after the last ')'; starttime is field 22, the 20th
     * after it. */
    char *p = strrchr(buf, ')');
    for (int field = 2; p != NULL && field < 22; field++)
        p = strchr(p + 1, ' ');
    char *end;
    errno = 0;
    unsigned long long v = p != NULL ? strtoull(p + 1, &end, 10) : 0;
    if (p == NULL || errno != 0 || end == p + 1) {
        errno = EIO;
        return -1;
    }
    *ticks = v;
    return 0;
}

int procid_uids(pid_t pid, uid_t uids[4])
{
    char buf[4096];
    if (read_proc(pid, "status", buf, sizeof buf) < 0)
        return -1;
    const char *line = strstr(buf, "\nUid:");
    unsigned long v[4];
    if (line == NULL || sscanf(line + 5, "%lu %lu %lu %lu", &v[0], &v[1], &v[2], &v[3]) != 4) {
        errno = EIO;
        return -1;
    }
    for (int i = 0; i < 4; i++)
        uids[i] = (uid_t)v[i];
    return 0;
}
