/*
 * layout.c -- prints the C compiler's sizeof/offsetof of every ABI struct as JSON, so the
 * Pi bridge's koffi mirror (host/pi/abi.js, abiLayout) can be checked against the
 * header rather than trusted. Built and run by tests/e2e/run.sh.
 */
#include <stddef.h>
#include <stdio.h>

#include "agent_plugin.h"

/* BEGIN prints the name and size of the struct T names, opening its "offsets" object; FIELD
 * adds one of its fields. */
#define NAME_(t) #t
#define NAME(t) NAME_(t)
#define BEGIN(t) printf("%s\"%s\":{\"size\":%zu,\"offsets\":{", first_struct ? "" : "}},", NAME(t), sizeof(t)), \
    first_struct = 0, first = 1
#define FIELD(f) printf("%s\"%s\":%zu", first ? "" : ",", #f, offsetof(T, f)), first = 0

int main(void)
{
    int first_struct = 1, first = 1;
    printf("{");
#define T ap_host_api
    BEGIN(T);
    FIELD(struct_size); FIELD(abi_version); FIELD(api_level); FIELD(reserved0); FIELD(host_ctx);
    FIELD(host_name); FIELD(free); FIELD(log); FIELD(notify); FIELD(session_info); FIELD(get_branch);
    FIELD(get_entry); FIELD(append_custom); FIELD(get_model); FIELD(complete); FIELD(register_command);
    FIELD(register_tool); FIELD(send_user_message); FIELD(get_entries); FIELD(complete_async);
#undef T
#define T ap_plugin
    BEGIN(T);
    FIELD(struct_size); FIELD(abi_version); FIELD(api_level); FIELD(reserved0); FIELD(name);
    FIELD(version); FIELD(state); FIELD(release); FIELD(release_context); FIELD(unload);
    FIELD(session_start); FIELD(session_shutdown); FIELD(before_agent_start); FIELD(context);
    FIELD(before_provider_request); FIELD(turn_end); FIELD(tool_call); FIELD(tool_result);
    FIELD(session_before_compact); FIELD(session_compact); FIELD(session_tree); FIELD(agent_end);
#undef T
#define T ap_message_in
    BEGIN(T);
    FIELD(entry_id); FIELD(json); FIELD(json_len);
#undef T
#define T ap_context_event
    BEGIN(T);
    FIELD(struct_size); FIELD(reserved0); FIELD(n_messages); FIELD(messages); FIELD(system_prompt);
#undef T
#define T ap_context_item
    BEGIN(T);
    FIELD(input_index); FIELD(json);
#undef T
#define T ap_context_result
    BEGIN(T);
    FIELD(n_items); FIELD(items);
#undef T
    printf("}}}\n");
    return 0;
}
