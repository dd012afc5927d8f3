/*
 * tools.h -- the reference host's built-in tools, with the reference agent's argument
 * names: read {path, offset?, limit?}, write {path, content}, edit {path, oldText,
 * newText}, bash {command, timeout?}. Relative paths resolve against cwd.
 */
#ifndef HOST_TOOLS_H
#define HOST_TOOLS_H

#include <cjson/cJSON.h>

/* The JSON array of tool definitions [{name, description, parameters}] (caller owns). */
cJSON *tools_builtin_definitions(void);

/* 1 when `name` is a built-in tool. */
int tools_is_builtin(const char *name);

/* Run a built-in tool. Returns a result object the caller owns:
 * {"content":[{"type":"text","text":...}],"details":{...}?,"isError":bool}.
 * Never NULL except on OOM; a failing tool is an isError result, not a crash. */
cJSON *tools_run(const char *name, const cJSON *arguments, const char *cwd);

#endif
