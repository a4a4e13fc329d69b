/*
 * A power-loss recorder for the server under test (LD_PRELOAD): after every successful
 * fsync/fdatasync of a regular file under $AW_POWERLOSS_DIR it copies the file, as it is
 * then, to <file>.synced. What a power cut leaves on a disk is exactly what was last synced,
 * so a test kills the server (SIGKILL) at any moment, puts each <file>.synced in place of
 * its file (files never synced are gone, SQLite's -shm never survives), and starts the
 * server on what a machine that lost power would find. Like LazyFS, but in 40 lines.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

static void snapshot(int fd) {
    const char *dir = getenv("AW_POWERLOSS_DIR");
    if (!dir || !*dir) return;
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) return;
    path[n] = 0;
    if (strncmp(path, dir, strlen(dir)) != 0 || strstr(path, ".synced")) return;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
    char out[PATH_MAX + 16], tmp[PATH_MAX + 32];
    snprintf(out, sizeof out, "%s.synced", path);
    snprintf(tmp, sizeof tmp, "%s.synced.tmp", path);
    int dst = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (dst < 0) return;
    off_t off = 0;
    while (off < st.st_size) {
        ssize_t w = sendfile(dst, fd, &off, st.st_size - off);
        if (w <= 0) break;
    }
    close(dst);
    rename(tmp, out);
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    int r = real(fd);
    if (r == 0) snapshot(fd);
    return r;
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    int r = real(fd);
    if (r == 0) snapshot(fd);
    return r;
}
