/*
 * bench_rss.c -- peak resident set of one command, for the shell benchmarks (the C ones
 * read their own getrusage). Runs the command as a child, passes its output and exit
 * status through, and reports the child's ru_maxrss (its largest resident set, in kB)
 * from wait4, so the figure is that process's alone and not the shell's or a sibling's.
 *
 *   bench_rss [-o FILE] command [args...]
 *
 * With -o the figure (a bare number of kB) is appended to FILE, so a script can put it in
 * a table column; without it "peak RSS: N kB" goes to stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *out = NULL;
    int first = 1;
    if (argc > 2 && strcmp(argv[1], "-o") == 0) {
        out = argv[2];
        first = 3;
    }
    if (first >= argc) {
        fprintf(stderr, "usage: bench_rss [-o FILE] command [args...]\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("bench_rss: fork");
        return 2;
    }
    if (pid == 0) {
        execvp(argv[first], argv + first);
        fprintf(stderr, "bench_rss: cannot run %s: %s\n", argv[first], strerror(errno));
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR) {
            perror("bench_rss: wait4");
            return 2;
        }
    }
    if (out) {
        FILE *f = fopen(out, "a");
        if (!f) {
            perror("bench_rss: -o");
            return 2;
        }
        fprintf(f, "%ld\n", ru.ru_maxrss);
        fclose(f);
    } else {
        fprintf(stderr, "peak RSS: %ld kB\n", ru.ru_maxrss);
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
