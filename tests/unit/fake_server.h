/*
 * fake_server.h -- the loopback scripted model (tests/contract/fake_openai.py) for unit
 * suites that talk HTTP: started per test with its script and record in `dir`, its port read
 * from the first line it prints. Included after cmocka and util.h.
 */
#ifndef TEST_FAKE_SERVER_H
#define TEST_FAKE_SERVER_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct fake_server {
    pid_t pid;
    int port;
    char url[64];      /* http://127.0.0.1:PORT/v1 */
    char record[300];  /* every request, one JSON line each */
} fake_server;

/* Run argv (argv[0] looked up on PATH) with its stdout on a pipe and read the port it
 * prints first; fs->url is then http://127.0.0.1:PORT/v1. fs->record is the caller's. */
static void fake_spawn(fake_server *fs, char *const argv[])
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fs->pid = fork();
    assert_true(fs->pid >= 0);
    if (fs->pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    char line[32] = "";
    size_t n = 0;
    while (n < sizeof line - 1) {
        ssize_t r = read(fds[0], line + n, 1);
        if (r <= 0 || line[n] == '\n') break;
        n++;
    }
    line[n] = '\0';
    close(fds[0]);
    fs->port = atoi(line);
    snprintf(fs->url, sizeof fs->url, "http://127.0.0.1:%d/v1", fs->port);
    assert_true(fs->port > 0);
}

/* extra_arg: one more option for the fake (e.g. "--record-answers"), or NULL. */
static void fake_start(fake_server *fs, const char *dir, const char *script_json, const char *extra_arg)
{
    const char *root = getenv("ROOT");
    char *script = lc_asprintf("%s/script.json", dir);
    char *server = lc_asprintf("%s/tests/contract/fake_openai.py", root ? root : ".");
    snprintf(fs->record, sizeof fs->record, "%s/record.jsonl", dir);
    FILE *f = fopen(script, "w");
    assert_non_null(f);
    fputs(script_json, f);
    fclose(f);
    char *argv[] = {"python3", server, "--port", "0", "--script", script, "--record", fs->record,
                    (char *)extra_arg, NULL};
    fake_spawn(fs, argv);
    free(script);
    free(server);
}

/* A group setup for suites that talk to the fake: a request written to a fake that has
 * already closed the connection must fail that call, not end the suite with SIGPIPE. */
static inline int fake_ignore_sigpipe(void **state)
{
    (void)state;
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

static void fake_stop(fake_server *fs)
{
    kill(fs->pid, SIGTERM);
    waitpid(fs->pid, NULL, 0);
}

#endif
