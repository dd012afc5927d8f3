/*
 * mcp.h -- `lcm mcp`: a Model Context Protocol server over stdio (JSON-RPC 2.0, one message
 * per line) that exposes the lossless stores under <home>/lcm/ to other agents, read-only:
 * lcm_grep, lcm_describe, lcm_expand, lcm_sessions, lcm_status, lcm_handoff, and
 * lcm_contracts (list/show; a change only with "confirm": true). Owns the protocol
 * handling (lifecycle, error shapes) and the tools' argument parsing; every read goes
 * through the engine (store_open_readonly, recall_*, maint_*). The same tool functions
 * back the plain `lcm grep|status|sessions` verbs.
 */
#ifndef LCM_MCP_H
#define LCM_MCP_H

#include <stdio.h>

#include <cjson/cJSON.h>

/* JSON-RPC 2.0 error codes the server answers with. */
#define MCP_PARSE_ERROR -32700
#define MCP_INVALID_REQUEST -32600
#define MCP_METHOD_NOT_FOUND -32601
#define MCP_INVALID_PARAMS -32602
#define MCP_INTERNAL_ERROR -32603

/* The newest protocol revision this server speaks (answered when the client asks for one
 * it does not know). */
#define MCP_PROTOCOL_LATEST "2025-06-18"

/* lcm's version: `lcm --version`, the MCP server's serverInfo. */
#define LCM_VERSION "0.1.0"

typedef struct mcp_ctx {
    const char *home;   /* the agent home: stores live in <home>/lcm/ */
    const char *cwd;    /* the project for scope "sessions" when a call names none */
    /* The `lcm` command runs the tool for a person (cliview.h): status in its words and
     * sizes, sessions by short id and title, cut to `width` columns (0: no cut). */
    int cli;
    int width;
} mcp_ctx;

/* Run one tool by name with its arguments (an object or NULL). *text (malloc'd) is what
 * the tool says; *is_error is 1 when the tool failed (bad arguments included). Returns
 * LC_NOTFOUND for an unknown tool name (no text), LC_NOMEM on allocation failure, else
 * LC_OK. */
int mcp_tool_call(const mcp_ctx *c, const char *name, const cJSON *args, char **text,
                  int *is_error);

/* The tools/list result's "tools" array (caller deletes). */
cJSON *mcp_tool_list(void);

/* Handle one received line. Returns the response line (malloc'd, no newline) or NULL
 * when nothing is to be answered (a notification, a response from the client). */
char *mcp_handle_line(const mcp_ctx *c, const char *line, size_t len);

/* Serve until `in` ends: read lines, write one response line each to `out` (flushed). */
int mcp_serve(const mcp_ctx *c, FILE *in, FILE *out, char **err);

#endif
