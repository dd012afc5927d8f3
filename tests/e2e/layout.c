/*
 * layout.c -- prints the C compiler's sizeof/offsetof of every ABI struct as JSON, so the
 * Pi bridge's koffi mirror (host/pi/extension.js, abiLayout) can be checked against the
 * header rather than trusted. Built and run by tests/e2e/run.sh.
 */
#include <stddef.h>
#include <stdio.h>

#include "agent_plugin.h"

#define FIELD(t, f) printf("%s\"%s\":%zu", first ? "" : ",", #f, offsetof(t, f)), first = 0

int main(void)
{
    int first;
    printf("{");
    printf("\"ap_host_api\":{\"size\":%zu,\"offsets\":{", sizeof(ap_host_api));
    first = 1;
    FIELD(ap_host_api, struct_size); FIELD(ap_host_api, abi_version);
    FIELD(ap_host_api, api_level); FIELD(ap_host_api, reserved0);
    FIELD(ap_host_api, host_ctx); FIELD(ap_host_api, host_name); FIELD(ap_host_api, free);
    FIELD(ap_host_api, log); FIELD(ap_host_api, notify); FIELD(ap_host_api, session_info);
    FIELD(ap_host_api, get_branch); FIELD(ap_host_api, get_entry);
    FIELD(ap_host_api, append_custom); FIELD(ap_host_api, get_model);
    FIELD(ap_host_api, complete); FIELD(ap_host_api, register_command);
    FIELD(ap_host_api, register_tool); FIELD(ap_host_api, send_user_message);
    FIELD(ap_host_api, get_entries); FIELD(ap_host_api, complete_async);
    printf("}},\"ap_plugin\":{\"size\":%zu,\"offsets\":{", sizeof(ap_plugin));
    first = 1;
    FIELD(ap_plugin, struct_size); FIELD(ap_plugin, abi_version); FIELD(ap_plugin, api_level);
    FIELD(ap_plugin, reserved0); FIELD(ap_plugin, name); FIELD(ap_plugin, version);
    FIELD(ap_plugin, state); FIELD(ap_plugin, release); FIELD(ap_plugin, release_context);
    FIELD(ap_plugin, unload); FIELD(ap_plugin, session_start); FIELD(ap_plugin, session_shutdown);
    FIELD(ap_plugin, before_agent_start); FIELD(ap_plugin, context);
    FIELD(ap_plugin, before_provider_request); FIELD(ap_plugin, turn_end);
    FIELD(ap_plugin, tool_call); FIELD(ap_plugin, tool_result);
    FIELD(ap_plugin, session_before_compact); FIELD(ap_plugin, session_compact);
    FIELD(ap_plugin, session_tree); FIELD(ap_plugin, agent_end);
    printf("}},\"ap_message_in\":{\"size\":%zu,\"offsets\":{", sizeof(ap_message_in));
    first = 1;
    FIELD(ap_message_in, entry_id); FIELD(ap_message_in, json); FIELD(ap_message_in, json_len);
    printf("}},\"ap_context_event\":{\"size\":%zu,\"offsets\":{", sizeof(ap_context_event));
    first = 1;
    FIELD(ap_context_event, struct_size); FIELD(ap_context_event, reserved0);
    FIELD(ap_context_event, n_messages); FIELD(ap_context_event, messages);
    FIELD(ap_context_event, system_prompt);
    printf("}},\"ap_context_item\":{\"size\":%zu,\"offsets\":{", sizeof(ap_context_item));
    first = 1;
    FIELD(ap_context_item, input_index); FIELD(ap_context_item, json);
    printf("}},\"ap_context_result\":{\"size\":%zu,\"offsets\":{", sizeof(ap_context_result));
    first = 1;
    FIELD(ap_context_result, n_items); FIELD(ap_context_result, items);
    printf("}}}\n");
    return 0;
}
